"""Last-attempt records in the leases table (item ``sub`` = ``dl#{shard}``, ``lease`` = ``{sub}#{gen}#{id}``).

One item per delivery at maxDeliveryAttempts of a subscription with a dead-letter policy, written in
one BatchWriteItem per pull response and removed once the message is settled. The records of all
subscriptions share LAST_ATTEMPT_SHARDS partitions, so the dead-letter sweep finds the due ones with
that many Queries and no Scan. core/queueing/deadletter.py says why they exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.queueing.deadletter import LastAttempt, shard_of
from chalicelib.store import aws, batch
from chalicelib.store.errors import aws_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

LAST_ATTEMPT_SHARDS = 4
WHAT = "last-attempt records"


def _key(subscription: str, gen: int, mid: str) -> dict[str, Any]:
    return {"sub": {"S": f"dl#{shard_of(subscription, LAST_ATTEMPT_SHARDS)}"},
            "lease": {"S": f"{subscription}#{gen}#{mid}"}}


def _item(entry: LastAttempt, expires: int) -> dict[str, Any]:
    return {**_key(entry.subscription, entry.queue_gen, entry.message_id),
            "name": {"S": entry.subscription}, "gen": {"N": str(entry.queue_gen)}, "mid": {"S": entry.message_id},
            "q": {"S": entry.queue_url}, "r": {"S": entry.receipt}, "b": {"S": entry.body},
            "a": {"N": str(entry.attempt)}, "due": {"N": repr(entry.due)}, "ttl": {"N": str(expires)}}


def _entry(item: dict[str, Any]) -> LastAttempt:
    return LastAttempt(item["name"]["S"], int(item["gen"]["N"]), item["mid"]["S"], item["q"]["S"], item["r"]["S"],
                       item["b"]["S"], int(item["a"]["N"]), float(item["due"]["N"]))


class LastAttemptStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.leases_table

    def put(self, entries: Sequence[LastAttempt], expires: int) -> None:
        """Remember last attempts (BatchWriteItem, 25 a call)."""
        batch.write_all(self._ddb, self._table, [{"PutRequest": {"Item": _item(e, expires)}} for e in entries], WHAT)

    def get(self, subscription: str, gen: int, mids: Sequence[str]) -> list[LastAttempt]:
        """The records of these messages that exist (strongly consistent BatchGetItem)."""
        keys = [_key(subscription, gen, m) for m in dict.fromkeys(mids)]
        return [_entry(i) for i in batch.get_all(self._ddb, self._table, keys, WHAT, ConsistentRead=True)]

    def delete(self, entries: Sequence[LastAttempt]) -> None:
        batch.write_all(self._ddb, self._table, [
            {"DeleteRequest": {"Key": _key(e.subscription, e.queue_gen, e.message_id)}} for e in entries], WHAT)

    def postpone(self, subscription: str, gen: int, mid: str, due: float) -> bool:
        """Move one record's deadline (a modifyAckDeadline of a last attempt); False if there is none."""
        try:
            with aws_errors(WHAT, allow=("ConditionalCheckFailedException",)):
                self._ddb.update_item(TableName=self._table, Key=_key(subscription, gen, mid),
                                      UpdateExpression="SET due = :d", ConditionExpression="attribute_exists(r)",
                                      ExpressionAttributeValues={":d": {"N": repr(due)}})
        except ClientError:
            return False
        return True

    def due(self, now: float, limit: int) -> list[LastAttempt]:
        """Up to ``limit`` records whose deadline has passed: one Query per shard (more if paged)."""
        out: list[LastAttempt] = []
        for shard in range(LAST_ATTEMPT_SHARDS):
            args: QueryInputTypeDef = {
                "TableName": self._table, "KeyConditionExpression": "#s = :p", "FilterExpression": "due <= :now",
                "ExpressionAttributeNames": {"#s": "sub"},
                "ExpressionAttributeValues": {":p": {"S": f"dl#{shard}"}, ":now": {"N": repr(now)}}}
            while len(out) < limit:
                with aws_errors(WHAT):
                    resp = self._ddb.query(**args)
                out.extend(_entry(i) for i in resp.get("Items", []))
                if "LastEvaluatedKey" not in resp:
                    break
                args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return out[:limit]
