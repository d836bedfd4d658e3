"""Schemas in the resources table: a head item per schema and one item per revision.

Items (hash key ``pk``, range key ``sk``):
- schema:   pk=``project#{p}``           sk=``schema#{id}``  doc (the newest revision as JSON), uuid
- revision: pk=``schema#{schema name}``  sk=``rev#{revision id}``  doc, uuid (the schema's)

A revision counts only while the head's uuid is its own: revisions a crash left behind when their schema was
deleted never show up in a schema created again under the same name.

A get is one GetItem of the head; the revisions of a schema are one Query. Head and revision change together,
in one transaction. ``cached_revisions`` serves publish from a short per-process cache that this process's own
writes invalidate at once (docs/decisions/cost-model.md).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.errors import AlreadyExists, NotFound
from chalicelib.core.names import Name
from chalicelib.core.schemas.model import SchemaRecord, SchemaRevision, SchemaType
from chalicelib.core.ttlcache import TtlCache
from chalicelib.core.wire.pagetokens import PageTokens
from chalicelib.store import aws, batch, paging
from chalicelib.store.errors import aws_errors, client_error, code_of
from chalicelib.store.items import delete_existing

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef, WriteRequestTypeDef

    from chalicelib.store.aws import Item

_REV = "rev#"


def _head_key(name: Name) -> Item:
    return {"pk": {"S": f"project#{name.project}"}, "sk": {"S": f"schema#{name.id}"}}


def _revision_key(name: Name, revision_id: str) -> Item:
    return {"pk": {"S": f"schema#{name.path}"}, "sk": {"S": f"{_REV}{revision_id}"}}


def _doc(rev: SchemaRevision) -> AttributeValueTypeDef:
    return {"S": json.dumps({"name": rev.name, "type": rev.type.value, "definition": rev.definition,
                             "revisionId": rev.revision_id, "revisionCreateTime": rev.revision_create_time,
                             "created": rev.created})}


def _revision(item: Item) -> SchemaRevision:
    doc = json.loads(item["doc"]["S"])
    return SchemaRevision(doc["name"], SchemaType(doc["type"]), doc["definition"], doc["revisionId"],
                          doc["revisionCreateTime"], float(doc["created"]))


def _record(item: Item) -> SchemaRecord:
    return SchemaRecord(_revision(item), item["uuid"]["S"])


def _cancelled_by_condition(exc: ClientError, index: int) -> bool:
    reasons = [str(r.get("Code", "None")) for r in exc.response.get("CancellationReasons", [])]
    return code_of(exc) == "TransactionCanceledException" and len(reasons) > index and \
        reasons[index] == "ConditionalCheckFailed"


class SchemaStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table
        self._paged = paging.PagedTable(self._ddb, self._table, PageTokens(config.ack_secret))
        self._revisions: TtlCache[str, list[SchemaRevision]] = TtlCache(config.metadata_cache_seconds)

    # -- reads -------------------------------------------------------------------------------
    def get(self, name: Name) -> SchemaRecord | None:
        with aws_errors("GetSchema"):
            item = self._ddb.get_item(TableName=self._table, Key=_head_key(name), ConsistentRead=True).get("Item")
        return _record(item) if item else None

    def revision(self, name: Name, revision_id: str, uuid: str) -> SchemaRevision | None:
        """One revision of the schema ``uuid`` names."""
        with aws_errors("GetSchemaRevision"):
            item = self._ddb.get_item(TableName=self._table, Key=_revision_key(name, revision_id),
                                      ConsistentRead=True).get("Item")
        return _revision(item) if item and item.get("uuid", {}).get("S") == uuid else None

    def revisions(self, name: Name) -> list[SchemaRevision]:
        """Every revision of the schema, newest first (empty when the schema does not exist)."""
        head = self.get(name)
        if head is None:
            return []
        items, _ = self._paged.page(f"schema#{name.path}", _REV, 0, "")
        return sorted((_revision(i) for i in items if i.get("uuid", {}).get("S") == head.uuid),
                      key=lambda r: r.created, reverse=True)

    def cached_revisions(self, name: Name) -> list[SchemaRevision]:
        now = time.monotonic()
        revisions = self._revisions.get(name.path, now)
        if revisions is None:
            revisions = self.revisions(name)
            if revisions:  # a missing schema is never cached
                self._revisions.put(name.path, revisions, now)
        return revisions

    def page(self, project: str, page_size: int, token: str) -> tuple[list[SchemaRecord], str]:
        items, nxt = self._paged.page(f"project#{project}", "schema#", page_size, token)
        return [_record(i) for i in items], nxt

    # -- writes ------------------------------------------------------------------------------
    def create(self, name: Name, record: SchemaRecord) -> None:
        head: Item = {**_head_key(name), "doc": _doc(record.head), "uuid": {"S": record.uuid}}
        rev: Item = {**_revision_key(name, record.head.revision_id), "doc": _doc(record.head),
                     "uuid": {"S": record.uuid}}
        try:
            self._transact("CreateSchema", name, [
                {"Put": {"TableName": self._table, "Item": head, "ConditionExpression": "attribute_not_exists(pk)"}},
                {"Put": {"TableName": self._table, "Item": rev}},
            ])
        except ClientError as exc:
            if _cancelled_by_condition(exc, 0):
                raise AlreadyExists("Schema already exists") from None
            raise client_error(exc, "CreateSchema") from exc

    def commit(self, name: Name, revision: SchemaRevision, uuid: str) -> None:
        """Add ``revision`` to the schema ``uuid`` names (NOT_FOUND when it is gone) and make it the head."""
        head = self._set_head(name, revision)
        head["Update"]["ConditionExpression"] = "#uuid = :uuid"  # uuid is one of DynamoDB's reserved words
        head["Update"]["ExpressionAttributeNames"] = {"#uuid": "uuid"}
        head["Update"]["ExpressionAttributeValues"] = {":doc": _doc(revision), ":uuid": {"S": uuid}}
        try:
            self._transact("CommitSchema", name, [
                head,
                {"Put": {"TableName": self._table, "Item": {**_revision_key(name, revision.revision_id),
                                                            "doc": _doc(revision), "uuid": {"S": uuid}},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
            ])
        except ClientError as exc:
            if _cancelled_by_condition(exc, 0):
                raise NotFound("Schema not found") from None
            raise client_error(exc, "CommitSchema") from exc

    def delete_revision(self, name: Name, revision_id: str, new_head: SchemaRevision | None) -> None:
        """Remove one revision; ``new_head`` replaces the head when the removed revision was it."""
        ops: list[TransactWriteItemTypeDef] = [{"Delete": {
            "TableName": self._table, "Key": _revision_key(name, revision_id),
            "ConditionExpression": "attribute_exists(pk)"}}]
        if new_head is not None:
            ops.append(self._set_head(name, new_head))
        try:
            self._transact("DeleteSchemaRevision", name, ops)
        except ClientError as exc:
            if _cancelled_by_condition(exc, 0) or _cancelled_by_condition(exc, 1):
                raise NotFound("Schema revision not found") from None
            raise client_error(exc, "DeleteSchemaRevision") from exc

    def delete(self, name: Name) -> None:
        """Remove the schema, then its revisions (left-over revisions of a crash are unreachable and harmless:
        a schema created again under the name starts from a new head)."""
        self._revisions.drop(name.path)
        try:
            delete_existing(self._ddb, self._table, _head_key(name), "DeleteSchema", "Schema not found")
        finally:
            self._revisions.drop(name.path)
        items, _ = self._paged.page(f"schema#{name.path}", _REV, 0, "")
        deletes: list[WriteRequestTypeDef] = [{"DeleteRequest": {"Key": {"pk": i["pk"], "sk": i["sk"]}}}
                                              for i in items]
        batch.write_all(self._ddb, self._table, deletes, "DeleteSchema")

    # -- helpers -----------------------------------------------------------------------------
    def _set_head(self, name: Name, revision: SchemaRevision) -> TransactWriteItemTypeDef:
        return {"Update": {"TableName": self._table, "Key": _head_key(name), "UpdateExpression": "SET doc = :doc",
                           "ExpressionAttributeValues": {":doc": _doc(revision)},
                           "ConditionExpression": "attribute_exists(pk)"}}

    def _transact(self, what: str, name: Name, ops: list[TransactWriteItemTypeDef]) -> None:
        self._revisions.drop(name.path)
        try:
            with aws_errors(what):
                self._ddb.transact_write_items(TransactItems=ops)
        finally:  # a reader may have cached the old revisions while the write ran
            self._revisions.drop(name.path)
