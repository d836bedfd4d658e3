"""The slices of a wide topic's fan-out (core/fanout_slices.py): their asynchronous invocations of the fan-out
function, and one completion item per sliced publish request in the resources table.

Item: pk=``fanout#{request id}``, sk=``slices``; ``pending`` the string set of the slice ids not done yet, ``ttl``
(DynamoDB TTL) the log entry's own expiry. The stream handler adds its slices' ids before it invokes them (a retry
adds them again: a set, so nothing changes), each slice deletes its own id when its sends are done, and the slice
that empties the set marks the log entry fanned. A slice run twice deletes an id that is gone: the set stays as it
is. One item per request spreads the writes over the table's partitions, away from the topic's log partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors
from chalicelib.store.invoker import AsyncInvoker
from chalicelib.store.workers import Workers

if TYPE_CHECKING:
    from chalicelib.store.aws import Item

PENDING = "pending"


def _key(request_id: str) -> Item:
    return {"pk": {"S": f"fanout#{request_id}"}, "sk": {"S": "slices"}}


class SliceStore:
    def __init__(self, config: Config, invoker: AsyncInvoker, workers: Workers) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table
        self._invoker = invoker
        self._workers = workers

    def expect(self, request_id: str, slice_ids: Sequence[str], expires: int) -> None:
        """Record the slices the request waits for (before any of them can finish)."""
        with aws_errors("Fan-out slices (DynamoDB UpdateItem)"):
            self._ddb.update_item(TableName=self._table, Key=_key(request_id),
                                  UpdateExpression="ADD #p :ids SET #ttl = :ttl",
                                  ExpressionAttributeNames={"#p": PENDING, "#ttl": "ttl"},
                                  ExpressionAttributeValues={":ids": {"SS": list(slice_ids)},
                                                             ":ttl": {"N": str(expires)}})

    def invoke(self, function: str, events: Sequence[dict[str, Any]]) -> None:
        """One asynchronous invocation of ``function`` per event, all at once; the first failure raises."""
        self._workers.map(lambda event: self._invoker.invoke(function, event), events)

    def finish(self, request_id: str, slice_id: str) -> bool:
        """Count one slice done; True when no slice of the request is left (the caller marks the entry fanned).
        False, too, when the item is gone (expired with its log entry)."""
        try:
            with aws_errors("Fan-out slices (DynamoDB UpdateItem)", allow=("ConditionalCheckFailedException",)):
                resp = self._ddb.update_item(TableName=self._table, Key=_key(request_id),
                                             UpdateExpression="DELETE #p :id",
                                             ConditionExpression="attribute_exists(pk)",
                                             ExpressionAttributeNames={"#p": PENDING},
                                             ExpressionAttributeValues={":id": {"SS": [slice_id]}},
                                             ReturnValues="ALL_NEW")
        except ClientError:
            return False
        return PENDING not in resp.get("Attributes", {})
