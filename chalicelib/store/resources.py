"""Topics and subscriptions in the resources table.

Items (hash key ``pk``, range key ``sk``):
- topic:        pk=``project#{p}``        sk=``topic#{id}``  doc, created
- subscription: pk=``project#{p}``        sk=``sub#{id}``    doc, created, queue_url, queue_gen
- topic index:  pk=``topic#{topic name}`` sk=``sub#{name}``  a copy of the subscription item

The index item lets fan-out find a topic's subscriptions (with everything it needs to deliver)
in one strongly consistent Query. Subscription and index item change together, in one
transaction, conditioned on the topic's existence at creation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.errors import AlreadyExists, InvalidArgument, NotFound
from chalicelib.core.models import Subscription, Topic
from chalicelib.core.names import Name
from chalicelib.core.pagetokens import PageTokens
from chalicelib.core.records import SubscriptionRecord, TopicRecord
from chalicelib.core.ttlcache import TtlCache
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, client_error, code_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef, ScanInputTypeDef, TransactWriteItemTypeDef

    from chalicelib.store.aws import Item

R = TypeVar("R")
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="metro-resources")


def _topic_key(name: Name) -> Item:
    return {"pk": {"S": f"project#{name.project}"}, "sk": {"S": f"topic#{name.id}"}}


def _sub_key(name: Name) -> Item:
    return {"pk": {"S": f"project#{name.project}"}, "sk": {"S": f"sub#{name.id}"}}


def _index_key(topic: str, sub: str) -> Item:
    return {"pk": {"S": f"topic#{topic}"}, "sk": {"S": f"sub#{sub}"}}


def _start_key(pk: str, prefix: str, position: dict[str, str] | None) -> Item | None:
    """The ExclusiveStartKey of a verified page token's position (the sort key where the last page ended)."""
    if position is None:
        return None
    sort_key = position.get("sk", "")
    if set(position) != {"sk"} or not sort_key.startswith(prefix):
        raise InvalidArgument("Invalid page token")
    return {"pk": {"S": pk}, "sk": {"S": sort_key}}


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

    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table
        self._tokens = PageTokens(config.ack_secret)
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
        item: Item = {**_topic_key(name), "doc": {"S": rec.spec.model_dump_json(by_alias=True, exclude_none=True)},
                      "created": {"N": repr(rec.created)}}
        try:
            with aws_errors("UpdateTopic"):
                self._ddb.put_item(TableName=self._table, Item=item, ConditionExpression="attribute_exists(pk)")
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                raise NotFound("Topic not found") from None
            raise client_error(exc, "UpdateTopic") from exc
        finally:  # a reader may have cached the old record while the write ran
            self._topics.drop(name.path)

    def delete_topic(self, name: Name) -> None:
        self._topics.drop(name.path)
        try:
            with aws_errors("DeleteTopic"):
                self._ddb.delete_item(TableName=self._table, Key=_topic_key(name),
                                      ConditionExpression="attribute_exists(pk)")
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                raise NotFound("Topic not found") from None
            raise client_error(exc, "DeleteTopic") from exc
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
                raise AlreadyExists("Subscription already exists") from None
            raise client_error(exc, "CreateSubscription") from exc

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
        """Replace a subscription and its topic index item; ``old_topic`` index item is removed."""
        self._subs.drop(name.path)
        item = _sub_item(rec)
        ops: list[TransactWriteItemTypeDef] = [{"Put": {"TableName": self._table, "Item": {**_sub_key(name), **item},
                                              "ConditionExpression": "attribute_exists(pk)"}}]
        if rec.attached:
            ops.append({"Put": {"TableName": self._table, "Item": {**_index_key(rec.spec.topic, name.path), **item}}})
        if old_topic and (old_topic != rec.spec.topic or not rec.attached):
            ops.append({"Delete": {"TableName": self._table, "Key": _index_key(old_topic, name.path)}})
        try:
            with aws_errors("UpdateSubscription"):
                self._ddb.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if _condition_failed(exc):
                raise NotFound("Subscription does not exist") from None
            raise client_error(exc, "UpdateSubscription") from exc
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
        return _POOL.submit(aws.in_callers_part(lambda: self.topic_subscriptions(topic)[0]))

    def count_topics(self, project: str) -> int:
        return self._count(f"project#{project}", "topic#")

    def count_subscriptions(self, project: str) -> int:
        return self._count(f"project#{project}", "sub#")

    def count_topic_subscriptions(self, topic: str) -> int:
        return self._count(f"topic#{topic}", "sub#")

    def _count(self, pk: str, prefix: str) -> int:
        """How many items under ``pk`` have a sort key with ``prefix`` (Select=COUNT: no item is returned)."""
        args: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}},
            "Select": "COUNT",
        }
        total = 0
        with aws_errors("Count"):
            while True:
                resp = self._ddb.query(**args)
                total += resp.get("Count", 0)
                last = resp.get("LastEvaluatedKey")
                if not last:
                    return total
                args["ExclusiveStartKey"] = last

    def _query(self, pk: str, prefix: str, page_size: int, token: str) -> tuple[list[Item], str]:
        """One page (``page_size`` 0: every item) of the items under ``pk`` whose sort key has ``prefix``."""
        scope = f"{pk}\n{prefix}"
        args: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}},
            "ConsistentRead": True,
        }
        start = _start_key(pk, prefix, self._tokens.decode(scope, token))
        if start:
            args["ExclusiveStartKey"] = start
        items: list[Item] = []
        with aws_errors("List"):
            while True:
                if page_size:  # one item more than the page: it tells whether another page follows
                    args["Limit"] = page_size + 1 - len(items)
                resp = self._ddb.query(**args)
                items.extend(resp.get("Items", []))
                last = resp.get("LastEvaluatedKey")
                if not last or (page_size and len(items) > page_size):
                    break
                args["ExclusiveStartKey"] = last
        if page_size and len(items) > page_size:
            del items[page_size:]
            return items, self._tokens.encode(scope, {"sk": items[-1]["sk"]["S"]})
        return items, ""
