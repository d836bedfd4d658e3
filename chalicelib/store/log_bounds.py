"""The ends of a topic's message log, each read with one Query of one item per partition of the log (AMS's
offsets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.config import Config
from chalicelib.core.log_keys import log_partitions
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef


class LogBounds:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.messages_table

    def newest(self, topic: str) -> str | None:
        """The request id of the topic's newest publish request, if any."""
        return max(self._ends(topic, "", forward=False), default=None)

    def first_from(self, topic: str, from_ms: int) -> str | None:
        """The request id of the topic's first publish request at or after ``from_ms`` (epoch ms), if any."""
        return min(self._ends(topic, f"{max(from_ms, 0):013d}", forward=True), default=None)

    def _ends(self, topic: str, from_rid: str, *, forward: bool) -> list[str]:
        """One end of each partition of the topic's log."""
        return [rid for key in log_partitions(topic) if (rid := self._first(key, from_rid, forward=forward))]

    def _first(self, key: str, from_rid: str, *, forward: bool) -> str | None:
        values: dict[str, AttributeValueTypeDef] = {":t": {"S": key}}
        if from_rid:
            values[":from"] = {"S": from_rid}
        args: QueryInputTypeDef = {"TableName": self._table, "Limit": 1, "ScanIndexForward": forward,
                                   "ProjectionExpression": "rid",
                                   "KeyConditionExpression": "topic = :t" + (" AND rid >= :from" if from_rid else ""),
                                   "ExpressionAttributeValues": values}
        with aws_errors("Query (log bounds)"):
            items = self._ddb.query(**args).get("Items", [])
        return items[0]["rid"]["S"] if items else None
