"""Topics and subscriptions in the resources table.

Items (hash key ``pk``, range key ``sk``):
- topic:        pk=``project#{p}``        sk=``topic#{id}``  doc, created
- subscription: pk=``project#{p}``        sk=``sub#{id}``    doc, created, queue_url, queue_gen
- topic index:  pk=``topic#{topic name}`` sk=``sub#{name}``  a copy of the subscription item

Topic and subscription items also hold ``acl``: the uuids of the users allowed to publish to the topic or
consume from the subscription (core/access/identity.py); it goes with the resource when the resource is deleted.

The index item lets fan-out find a topic's subscriptions (with everything it needs to deliver)
in one strongly consistent Query. Subscription and index item change together, in one
transaction, conditioned on the topic's existence at creation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.errors import Aborted, AlreadyExists, NotFound
from chalicelib.core.names import COLLECTIONS, Name
from chalicelib.core.records import SubscriptionRecord, TopicRecord
from chalicelib.core.ttlcache import TtlCache
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.core.wire.pagetokens import PageTokens
from chalicelib.store import aws, paging
from chalicelib.store.errors import aws_errors, client_error, code_of
from chalicelib.store.items import delete_existing
from chalicelib.store.workers import Workers

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import ScanInputTypeDef, TransactWriteItemTypeDef

    from chalicelib.store.aws import Item

R = TypeVar("R")


def _topic_key(name: Name) -> Item:
    return {"pk": {"S": f"project#{name.project}"}, "sk": {"S": f"topic#{name.id}"}}


def _sub_key(name: Name) -> Item:
    return {"pk": {"S": f"project#{name.project}"}, "sk": {"S": f"sub#{name.id}"}}


def _resource_key(name: Name) -> Item:
    return _topic_key(name) if name.collection == "topics" else _sub_key(name)


def _index_key(topic: str, sub: str) -> Item:
    return {"pk": {"S": f"topic#{topic}"}, "sk": {"S": f"sub#{sub}"}}


def _cancellation_reasons(exc: ClientError) -> list[str]:
    """The per-item reasons of a cancelled transaction, in the order of its items ("None" where an item passed)."""
    return [str(r.get("Code", "None")) for r in exc.response.get("CancellationReasons", [])]


def _condition_failed(exc: ClientError) -> bool:
    """A transaction cancelled by its first item's condition (or by a condition, when AWS gives no reasons)."""
    if code_of(exc) != "TransactionCanceledException":
        return False
    reasons = _cancellation_reasons(exc)
    return not reasons or reasons[0] == "ConditionalCheckFailed"


def _sub_item(rec: SubscriptionRecord) -> Item:
    return {
        "doc": {"S": rec.spec.model_dump_json(by_alias=True, exclude_none=True)},
        "created": {"N": repr(rec.created)},
        "queue_url": {"S": rec.queue_url},
        "queue_gen": {"N": str(rec.queue_gen)},
    }


def _sub_record(item: Item) -> SubscriptionRecord:
    return SubscriptionRecord(
        spec=Subscription.model_validate_json(item["doc"]["S"]),
        created=float(item["created"]["N"]),
        queue_url=item["queue_url"]["S"],
        queue_gen=int(item["queue_gen"]["N"]),
    )


def _topic_record(item: Item) -> TopicRecord:
    return TopicRecord(Topic.model_validate_json(item["doc"]["S"]), float(item["created"]["N"]))


def _through(cache: TtlCache[str, R], name: Name, load: Callable[[Name], R]) -> R:
    now = time.monotonic()
    rec = cache.get(name.path, now)
    if rec is None:
        rec = load(name)
        cache.put(name.path, rec, now)
    return rec


class ResourceStore:
    """Resource records; ``cached_*`` serve the data path from a short per-process cache
    (docs/decisions/cost-model.md), which this process's own writes invalidate at once."""

    def __init__(self, config: Config, workers: Workers) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table
        self._workers = workers
        self._paged = paging.PagedTable(self._ddb, self._table, PageTokens(config.ack_secret))
        self._topics: TtlCache[str, TopicRecord] = TtlCache(config.metadata_cache_seconds)
        self._subs: TtlCache[str, SubscriptionRecord] = TtlCache(config.metadata_cache_seconds)

    def cached_topic(self, name: Name) -> TopicRecord:
        """The topic, from the cache when fresh (NotFound is never cached)."""
        return _through(self._topics, name, self.require_topic)

    def cached_subscription(self, name: Name) -> SubscriptionRecord:
        return _through(self._subs, name, self.require_subscription)

    # -- topics ---------------------------------------------------------------------------
    def create_topic(self, name: Name, topic: Topic, now: float) -> TopicRecord:
        item: Item = {**_topic_key(name), "doc": {"S": topic.model_dump_json(by_alias=True, exclude_none=True)},
                      "created": {"N": repr(now)}}
        try:
            with aws_errors("CreateTopic"):
                self._ddb.put_item(TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                raise AlreadyExists("Topic already exists") from None
            raise client_error(exc, "CreateTopic") from exc
        return TopicRecord(topic, now)

    def get_topic(self, name: Name) -> TopicRecord | None:
        with aws_errors("GetTopic"):
            item = self._ddb.get_item(TableName=self._table, Key=_topic_key(name), ConsistentRead=True).get("Item")
        return _topic_record(item) if item else None

    def require_topic(self, name: Name) -> TopicRecord:
        rec = self.get_topic(name)
        if rec is None:
            raise NotFound("Topic not found")
        return rec

    def put_topic(self, name: Name, rec: TopicRecord) -> None:
        self._topics.drop(name.path)
        values: Item = {":doc": {"S": rec.spec.model_dump_json(by_alias=True, exclude_none=True)},
                        ":created": {"N": repr(rec.created)}}
        try:  # an update, not a put: the topic's ACL (an attribute of the item) stays
            with aws_errors("UpdateTopic"):
                self._ddb.update_item(TableName=self._table, Key=_topic_key(name), ExpressionAttributeValues=values,
                                      UpdateExpression="SET doc = :doc, created = :created",
                                      ConditionExpression="attribute_exists(pk)")
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                raise NotFound("Topic not found") from None
            raise client_error(exc, "UpdateTopic") from exc
        finally:  # a reader may have cached the old record while the write ran
            self._topics.drop(name.path)

    def delete_topic(self, name: Name) -> None:
        self._topics.drop(name.path)
        try:
            delete_existing(self._ddb, self._table, _topic_key(name), "DeleteTopic", "Topic not found")
        finally:  # a reader may have cached the old record while the write ran
            self._topics.drop(name.path)

    def list_topics(self, project: str, page_size: int, token: str) -> tuple[list[TopicRecord], str]:
        items, nxt = self._query(f"project#{project}", "topic#", page_size, token)
        return [_topic_record(i) for i in items], nxt

    # -- subscriptions --------------------------------------------------------------------
    def create_subscription(self, name: Name, topic: Name, rec: SubscriptionRecord) -> None:
        item = _sub_item(rec)
        try:
            with aws_errors("CreateSubscription"):
                self._ddb.transact_write_items(TransactItems=[
                    {"ConditionCheck": {"TableName": self._table, "Key": _topic_key(topic),
                                        "ConditionExpression": "attribute_exists(pk)"}},
                    {"Put": {"TableName": self._table, "Item": {**_sub_key(name), **item},
                             "ConditionExpression": "attribute_not_exists(pk)"}},
                    {"Put": {"TableName": self._table, "Item": {**_index_key(topic.path, name.path), **item}}},
                ])
        except ClientError as exc:
            reasons = _cancellation_reasons(exc)
            if reasons and reasons[0] == "ConditionalCheckFailed":
                raise NotFound("Subscription topic does not exist") from None
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                if self._written_by(name, rec):
                    return  # botocore retried a write whose answer was lost: the first attempt created it
                raise AlreadyExists("Subscription already exists") from None
            raise client_error(exc, "CreateSubscription") from exc

    def _written_by(self, name: Name, rec: SubscriptionRecord) -> bool:
        """The stored subscription is ``rec`` itself (its queue is unique to one create)."""
        stored = self.get_subscription(name)
        return stored is not None and stored.queue_url == rec.queue_url

    def get_subscription(self, name: Name) -> SubscriptionRecord | None:
        with aws_errors("GetSubscription"):
            item = self._ddb.get_item(TableName=self._table, Key=_sub_key(name), ConsistentRead=True).get("Item")
        return _sub_record(item) if item else None

    def require_subscription(self, name: Name) -> SubscriptionRecord:
        rec = self.get_subscription(name)
        if rec is None:
            raise NotFound("Subscription does not exist")
        return rec

    def put_subscription(self, name: Name, rec: SubscriptionRecord, old_topic: str | None = None) -> None:
        """Replace a subscription and its topic index item; ``old_topic`` index item is removed. ``rec`` must hold
        the queue generation read: if a seek swapped it meanwhile, ABORTED (NOT_FOUND if it is gone)."""
        self._subs.drop(name.path)
        item = _sub_item(rec)
        # An update, not a put, so the ACL (an attribute of the item) stays; the activity mark goes, as with a put.
        ops: list[TransactWriteItemTypeDef] = [{"Update": {
            # the queue generation read is still the subscription's: a seek may have swapped it meanwhile
            "TableName": self._table, "Key": _sub_key(name), "ConditionExpression": "queue_gen = :queue_gen",
            "UpdateExpression": "SET doc = :doc, created = :created, queue_url = :queue_url, queue_gen = :queue_gen "
                                "REMOVE active",
            "ExpressionAttributeValues": {f":{k}": v for k, v in item.items()}}}]
        if rec.attached:
            ops.append({"Put": {"TableName": self._table, "Item": {**_index_key(rec.spec.topic, name.path), **item}}})
        if old_topic and (old_topic != rec.spec.topic or not rec.attached):
            ops.append({"Delete": {"TableName": self._table, "Key": _index_key(old_topic, name.path)}})
        try:
            self._write_subscription(name, ops, "UpdateSubscription", NotFound("Subscription does not exist"))
        except NotFound:
            if self.get_subscription(name) is None:
                raise
            raise Aborted("The subscription changed meanwhile (a seek); try again.") from None

    def swap_queue(self, name: Name, rec: SubscriptionRecord, url: str, gen: int,
                   guard: TransactWriteItemTypeDef | None = None) -> SubscriptionRecord:
        """Point the subscription and its topic index item at queue generation ``gen``, in one transaction,
        only if it is still at ``rec``'s generation (else ABORTED: another seek won) and ``guard`` holds."""
        self._subs.drop(name.path)
        values: Item = {":url": {"S": url}, ":gen": {"N": str(gen)}, ":old": {"N": str(rec.queue_gen)}}
        ops: list[TransactWriteItemTypeDef] = [{"Update": {
            "TableName": self._table, "Key": _sub_key(name), "ConditionExpression": "queue_gen = :old",
            "UpdateExpression": "SET queue_url = :url, queue_gen = :gen", "ExpressionAttributeValues": values}}]
        if rec.attached:
            ops.append({"Update": {
                "TableName": self._table, "Key": _index_key(rec.spec.topic, name.path),
                "UpdateExpression": "SET queue_url = :url, queue_gen = :gen",
                "ExpressionAttributeValues": {":url": values[":url"], ":gen": values[":gen"]}}})
        if guard is not None:
            ops.append(guard)
        self._write_subscription(name, ops, "Seek", Aborted("The subscription changed during the seek; try again."))
        return SubscriptionRecord(rec.spec, rec.created, url, gen)

    def _write_subscription(self, name: Name, ops: list[TransactWriteItemTypeDef], what: str,
                            refused: Exception) -> None:
        """Run a transaction whose first item is the subscription's, conditioned; ``refused`` when it fails."""
        try:
            with aws_errors(what):
                self._ddb.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if _condition_failed(exc):
                raise refused from None
            raise client_error(exc, what) from exc
        finally:  # a reader may have cached the old record while the write ran
            self._subs.drop(name.path)

    def delete_subscription(self, name: Name, topic: str) -> None:
        self._subs.drop(name.path)
        try:
            with aws_errors("DeleteSubscription"):
                self._ddb.transact_write_items(TransactItems=[
                    {"Delete": {"TableName": self._table, "Key": _sub_key(name),
                                "ConditionExpression": "attribute_exists(pk)"}},
                    {"Delete": {"TableName": self._table, "Key": _index_key(topic, name.path)}},
                ])
        except ClientError as exc:
            if _condition_failed(exc):
                raise NotFound("Subscription does not exist") from None
            raise client_error(exc, "DeleteSubscription") from exc
        finally:  # a reader may have cached the old record while the write ran
            self._subs.drop(name.path)

    # -- access lists (the uuids of the users a topic's publishers or a subscription's consumers may be) ----
    def acl(self, name: Name) -> frozenset[str] | None:
        """The ACL of a topic or subscription; None when the resource does not exist."""
        with aws_errors("GetAcl"):
            item = self._ddb.get_item(TableName=self._table, Key=_resource_key(name), ConsistentRead=True,
                                      ProjectionExpression="pk, acl").get("Item")
        if item is None:
            return None
        return frozenset(v["S"] for v in item.get("acl", {}).get("L", []))

    def set_acl(self, name: Name, users: tuple[str, ...]) -> None:
        try:
            with aws_errors("ModifyAcl"):
                self._ddb.update_item(TableName=self._table, Key=_resource_key(name), UpdateExpression="SET acl = :a",
                                      ExpressionAttributeValues={":a": {"L": [{"S": u} for u in users]}},
                                      ConditionExpression="attribute_exists(pk)")
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                raise NotFound(f"{COLLECTIONS[name.collection].capitalize()} not found") from None
            raise client_error(exc, "ModifyAcl") from exc

    def acl_holdings(self, project: str, user: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The ids of the topics and of the subscriptions of ``project`` whose ACL lists the uuid ``user``."""
        def held(prefix: str) -> tuple[str, ...]:
            items, _ = self._query(f"project#{project}", prefix, 0, "")
            return tuple(i["sk"]["S"].removeprefix(prefix) for i in items
                         if any(v.get("S") == user for v in i.get("acl", {}).get("L", [])))

        return held("topic#"), held("sub#")

    def mark_active(self, name: Name, now: float) -> None:
        """Record subscriber activity (for expirationPolicy); callers rate-limit it."""
        try:
            with aws_errors("MarkActive", allow=("ConditionalCheckFailedException",)):
                self._ddb.update_item(TableName=self._table, Key=_sub_key(name), UpdateExpression="SET active = :t",
                                      ExpressionAttributeValues={":t": {"N": repr(now)}},
                                      ConditionExpression="attribute_exists(pk)")
        except ClientError:
            pass  # the subscription is gone: nothing to mark

    def all_subscriptions(self) -> list[tuple[SubscriptionRecord, float]]:
        """Every subscription with its last activity time (a paginated Scan; used by maintenance only)."""
        out = []
        args: ScanInputTypeDef = {"TableName": self._table, "FilterExpression": "begins_with(sk, :s) AND "
                                "begins_with(pk, :p)", "ExpressionAttributeValues": {":s": {"S": "sub#"},
                                                                                     ":p": {"S": "project#"}}}
        with aws_errors("Scan"):
            while True:
                resp = self._ddb.scan(**args)
                for item in resp.get("Items", []):
                    rec = _sub_record(item)
                    out.append((rec, float(item.get("active", {}).get("N", rec.created))))
                if "LastEvaluatedKey" not in resp:
                    return out
                args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def list_subscriptions(self, project: str, page_size: int, token: str) -> tuple[list[SubscriptionRecord], str]:
        items, nxt = self._query(f"project#{project}", "sub#", page_size, token)
        return [_sub_record(i) for i in items], nxt

    def topic_subscriptions(self, topic: str, page_size: int = 0, token: str = "") -> tuple[
            list[SubscriptionRecord], str]:
        """The live subscriptions of a topic, read consistently from the topic index."""
        items, nxt = self._query(f"topic#{topic}", "sub#", page_size, token)
        return [_sub_record(i) for i in items], nxt

    def start_topic_subscriptions(self, topic: str) -> Future[list[SubscriptionRecord]]:
        """:meth:`topic_subscriptions` on a background thread, so a caller can overlap it with other calls."""
        return self._workers.submit(aws.in_callers_part(lambda: self.topic_subscriptions(topic)[0]))

    def count_topics(self, project: str) -> int:
        return self._count(f"project#{project}", "topic#")

    def count_subscriptions(self, project: str) -> int:
        return self._count(f"project#{project}", "sub#")

    def count_topic_subscriptions(self, topic: str) -> int:
        return self._count(f"topic#{topic}", "sub#")

    def _count(self, pk: str, prefix: str) -> int:
        return self._paged.count(pk, prefix)

    def _query(self, pk: str, prefix: str, page_size: int, token: str) -> tuple[list[Item], str]:
        return self._paged.page(pk, prefix, page_size, token)
