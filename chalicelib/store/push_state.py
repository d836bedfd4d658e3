"""Push bookkeeping in the resources table: per-subscription throttle state and the push index.

Items (hash key ``pk``, range key ``sk``):
- throttle:   pk=``push#{subscription name}``  sk=``throttle``      acks, nacks, updated, streak, window, ceiling
- push index: pk=``push#index``                 sk=``{queue key}``   sub (the subscription name), push (bool)

The *queue key* is the subscription queue's name without its generation suffix (and without
``.fifo``): it is derived from the subscription name only, so it survives queue swaps and lets
the push handler find the subscription of an SQS event from ``eventSourceARN`` alone. The index
holds every subscription that pushes or has pushed (``push`` says which: a handler still holding
messages of a subscription switched to pull must find it, to hand them back); the local push pump
lists the pushing ones with one Query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from chalicelib.config import Config
from chalicelib.core.queueing.backoff import ThrottleState
from chalicelib.store import aws, batch
from chalicelib.store.errors import aws_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef, WriteRequestTypeDef

    from chalicelib.store.aws import Item

INDEX_PK = "push#index"
_FIELDS = ("acks", "nacks", "updated", "streak", "window", "ceiling")


def queue_name_of(url_or_arn: str) -> str:
    """The queue name of an SQS queue URL (``https://host/account/name``) or ARN (``arn:...:name``)."""
    if url_or_arn.startswith("arn:"):
        return url_or_arn.rsplit(":", 1)[-1]
    return urlsplit(url_or_arn).path.rstrip("/").rsplit("/", 1)[-1]


def queue_key(url_or_arn: str) -> str:
    """``metro-<hash>-<gen>[.fifo]`` -> ``metro-<hash>``: stable across the subscription's queue generations."""
    name = queue_name_of(url_or_arn).removesuffix(".fifo")
    head, sep, gen = name.rpartition("-")
    return head if sep and gen.isdigit() else name


def queue_arn(url: str, region: str) -> str:
    """The ARN of a queue from its URL (``https://sqs.{region}.amazonaws.com/{account}/{name}``), no API call."""
    parts = urlsplit(url).path.strip("/").split("/")
    account, name = (parts[-2], parts[-1]) if len(parts) >= 2 else ("000000000000", parts[-1])
    partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
    return f"arn:{partition}:sqs:{region}:{account}:{name}"


def _number(value: float) -> AttributeValueTypeDef:
    # DynamoDB numbers stop at 1e-130: decayed weights that small are zero anyway.
    value = float(value)
    return {"N": "0" if abs(value) < 1e-9 else f"{value:.17g}"}


class PushStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table

    # -- throttle state -----------------------------------------------------------------------
    @staticmethod
    def _throttle_key(subscription: str) -> Item:
        return {"pk": {"S": f"push#{subscription}"}, "sk": {"S": "throttle"}}

    def load_throttle(self, subscription: str) -> ThrottleState:
        """The stored state, or a fresh one (an eventually consistent read: the state is an estimate)."""
        with aws_errors("GetItem (push throttle)"):
            item = self._ddb.get_item(TableName=self._table, Key=self._throttle_key(subscription)).get("Item")
        if not item:
            return ThrottleState()
        return ThrottleState.from_dict({k: float(item[k]["N"]) for k in _FIELDS if k in item})

    def save_throttle(self, subscription: str, state: ThrottleState) -> None:
        item: Item = {**self._throttle_key(subscription), **{k: _number(v) for k, v in state.to_dict().items()}}
        with aws_errors("PutItem (push throttle)"):
            self._ddb.put_item(TableName=self._table, Item=item)

    # -- push index -----------------------------------------------------------------------------
    def index_put(self, key: str, subscription: str, push: bool = True) -> None:
        item: Item = {"pk": {"S": INDEX_PK}, "sk": {"S": key}, "sub": {"S": subscription}, "push": {"BOOL": push}}
        with aws_errors("PutItem (push index)"):
            self._ddb.put_item(TableName=self._table, Item=item)

    def forget(self, key: str, subscription: str) -> None:
        """Delete a subscription's index item and throttle state (one BatchWriteItem)."""
        deletes: list[WriteRequestTypeDef] = [{"DeleteRequest": {"Key": {"pk": {"S": INDEX_PK}, "sk": {"S": key}}}},
                   {"DeleteRequest": {"Key": self._throttle_key(subscription)}}]
        batch.write_all(self._ddb, self._table, deletes, "BatchWriteItem (push state)")

    def index_get(self, key: str) -> str | None:
        """The subscription whose queue has this key, or None when it never pushed."""
        with aws_errors("GetItem (push index)"):
            item = self._ddb.get_item(TableName=self._table, Key={"pk": {"S": INDEX_PK}, "sk": {"S": key}},
                                      ConsistentRead=True).get("Item")
        return item["sub"]["S"] if item else None

    def index_list(self, push_only: bool = True) -> list[str]:
        """Every push subscription's name (one Query, paged); with ``push_only`` False, every indexed one (export
        subscriptions are indexed as not pushing, service/exports.py)."""
        args: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": INDEX_PK}},
            "ConsistentRead": True,
        }
        if push_only:
            args.update({"FilterExpression": "#push = :yes", "ExpressionAttributeNames": {"#push": "push"},
                         "ExpressionAttributeValues": {":pk": {"S": INDEX_PK}, ":yes": {"BOOL": True}}})
        names: list[str] = []
        with aws_errors("Query (push index)"):
            while True:
                resp = self._ddb.query(**args)
                names.extend(i["sub"]["S"] for i in resp.get("Items", []))
                if not resp.get("LastEvaluatedKey"):
                    return names
                args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
