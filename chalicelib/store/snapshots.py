"""Snapshots: items of the resources table, and the message ids of their backlog in S3.

Items (hash key ``pk``, range key ``sk``):
- snapshot:       pk=``project#{p}``        sk=``snap#{id}``    doc, sub, ts, backlog, expires
- topic index:    pk=``topic#{topic name}`` sk=``snap#{name}``  expires (topics/{t}/snapshots lists these)

``ts`` is when the snapshot was taken (epoch ms): every message of the topic published from then on
belongs to it; ``backlog`` is the S3 key of the ids of the subscription's unacknowledged
messages published before (JSON: ``{"ids": [...], "keys": {ordering key: epoch ms}}``, the keys' bounds being
set for ordered subscriptions, core/replay/seek.Restore). Snapshot and index item are written and deleted together,
in one transaction.
An expired snapshot is gone for every reader at once; DynamoDB's TTL (``ttl``) deletes its items later, and the
bucket's lifecycle rule deletes backlog objects 8 days after they were written (a snapshot lives at most 7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.errors import AlreadyExists, NotFound
from chalicelib.core.names import Name
from chalicelib.core.wire.models import Snapshot
from chalicelib.core.wire.pagetokens import PageTokens
from chalicelib.store import aws, paging
from chalicelib.store.errors import aws_errors, client_error, code_of

if TYPE_CHECKING:
    from chalicelib.store.aws import Item

_MISSING = ("NoSuchKey", "404")


@dataclass(frozen=True)
class SnapshotRecord:
    spec: Snapshot
    subscription: str
    taken_ms: int
    backlog_key: str
    expires: float

    def live(self, now: float) -> bool:
        return now < self.expires


def backlog_key(name: Name, taken_ms: int, token: str) -> str:
    """Where a snapshot's held ids are kept in S3: one object per snapshot taken (``token`` keeps two apart)."""
    return f"snapshots/{name.project}/{name.id}/{taken_ms}-{token}.ids"


def _key(name: Name) -> Item:
    return {"pk": {"S": f"project#{name.project}"}, "sk": {"S": f"snap#{name.id}"}}


def _index_key(topic: str, name: str) -> Item:
    return {"pk": {"S": f"topic#{topic}"}, "sk": {"S": f"snap#{name}"}}


def _record(item: Item) -> SnapshotRecord:
    return SnapshotRecord(Snapshot.model_validate_json(item["doc"]["S"]), item["sub"]["S"], int(item["ts"]["N"]),
                          item["backlog"]["S"], float(item["expires"]["N"]))


def _item(rec: SnapshotRecord) -> Item:
    return {"doc": {"S": rec.spec.model_dump_json(by_alias=True, exclude_none=True)}, "sub": {"S": rec.subscription},
            "ts": {"N": str(rec.taken_ms)}, "backlog": {"S": rec.backlog_key}, "expires": {"N": repr(rec.expires)},
            "ttl": {"N": str(int(rec.expires) + 1)}}


class SnapshotStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._s3 = aws.s3(config)
        self._bucket = config.bucket
        self._table = config.resources_table
        self._paged = paging.PagedTable(self._ddb, self._table, PageTokens(config.ack_secret))

    def put_backlog(self, key: str, message_ids: list[str], key_bounds: dict[str, int]) -> None:
        body = json.dumps({"ids": message_ids, "keys": key_bounds}, separators=(",", ":"), ensure_ascii=False)
        with aws_errors("CreateSnapshot (S3 PutObject)"):
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=body.encode())

    def backlog(self, rec: SnapshotRecord) -> tuple[frozenset[str], dict[str, int]]:
        """The snapshot's held message ids and, for an ordered subscription, each ordering key's bound (ms)."""
        return self.read_backlog(rec.backlog_key)

    def read_backlog(self, key: str) -> tuple[frozenset[str], dict[str, int]]:
        """A snapshot's backlog by its S3 key (NOT_FOUND once it is gone)."""
        try:
            with aws_errors("Seek (S3 GetObject)", allow=_MISSING):
                body = json.loads(self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read())
        except ClientError:
            raise NotFound("Snapshot does not exist") from None
        return frozenset(body["ids"]), {str(k): int(v) for k, v in body["keys"].items()}

    def create(self, name: Name, rec: SnapshotRecord, now: float) -> None:
        """Write the snapshot and its topic index item; an existing live one is ALREADY_EXISTS."""
        item = _item(rec)
        try:
            with aws_errors("CreateSnapshot"):
                self._ddb.transact_write_items(TransactItems=[
                    {"Put": {"TableName": self._table, "Item": {**_key(name), **item},
                             "ConditionExpression": "attribute_not_exists(pk) OR expires <= :now",
                             "ExpressionAttributeValues": {":now": {"N": repr(now)}}}},
                    {"Put": {"TableName": self._table, "Item": {**_index_key(rec.spec.topic, name.path), **item}}},
                ])
        except ClientError as exc:
            if code_of(exc) == "TransactionCanceledException":
                raise AlreadyExists("Snapshot already exists") from None
            raise client_error(exc, "CreateSnapshot") from exc

    def find(self, name: Name, now: float) -> SnapshotRecord | None:
        """The live snapshot, or None (absent or expired)."""
        with aws_errors("GetSnapshot"):
            item = self._ddb.get_item(TableName=self._table, Key=_key(name), ConsistentRead=True).get("Item")
        rec = _record(item) if item is not None else None
        return rec if rec is not None and rec.live(now) else None

    def get(self, name: Name, now: float) -> SnapshotRecord:
        rec = self.find(name, now)
        if rec is None:
            raise NotFound("Snapshot does not exist")
        return rec

    def update(self, name: Name, rec: SnapshotRecord) -> None:
        item = _item(rec)
        with aws_errors("UpdateSnapshot"):
            self._ddb.transact_write_items(TransactItems=[
                {"Put": {"TableName": self._table, "Item": {**_key(name), **item}}},
                {"Put": {"TableName": self._table, "Item": {**_index_key(rec.spec.topic, name.path), **item}}},
            ])

    def delete(self, name: Name, rec: SnapshotRecord) -> None:
        with aws_errors("DeleteSnapshot"):
            self._ddb.transact_write_items(TransactItems=[
                {"Delete": {"TableName": self._table, "Key": _key(name)}},
                {"Delete": {"TableName": self._table, "Key": _index_key(rec.spec.topic, name.path)}},
            ])
            self._s3.delete_object(Bucket=self._bucket, Key=rec.backlog_key)

    def list_project(self, project: str, page_size: int, token: str, now: float) -> tuple[list[SnapshotRecord], str]:
        items, nxt = self._paged.page(f"project#{project}", "snap#", page_size, token)
        return [r for r in map(_record, items) if r.live(now)], nxt

    def list_topic(self, topic: str, page_size: int, token: str, now: float) -> tuple[list[str], str]:
        items, nxt = self._paged.page(f"topic#{topic}", "snap#", page_size, token)
        return [i["sk"]["S"].removeprefix("snap#") for i in items if float(i["expires"]["N"]) > now], nxt
