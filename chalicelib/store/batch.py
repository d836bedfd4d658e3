"""DynamoDB batch calls done completely: chunked to the API's limits, unprocessed items retried with backoff."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from chalicelib.core.errors import Unavailable
from chalicelib.store.errors import aws_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        KeysAndAttributesTypeDef,
        WriteRequestTypeDef,
        WriteRequestUnionTypeDef,
    )

    from chalicelib.store.aws import Item

WRITE_CHUNK = 25  # BatchWriteItem's limit
GET_CHUNK = 100  # BatchGetItem's limit
ROUNDS = 8  # unprocessed items are retried this many times, 50 ms doubling (about 6 s in all)

Sleep = Callable[[float], None]


class ReadOptions(TypedDict, total=False):
    """What BatchGetItem may be told besides the keys."""

    AttributesToGet: Sequence[str]
    ConsistentRead: bool
    ProjectionExpression: str
    ExpressionAttributeNames: Mapping[str, str]


def backoff_seconds(round_no: int) -> float:
    """The pause before retrying the items still unprocessed after ``round_no`` rounds."""
    return 0.05 * 2.0**round_no


def _backoff(round_no: int, what: str, sleep: Sleep) -> None:
    if round_no >= ROUNDS:
        raise Unavailable(f"Part of {what} stayed unprocessed; retry.")
    sleep(backoff_seconds(round_no))


def write_all(ddb: DynamoDBClient, table: str, requests: Sequence[WriteRequestTypeDef], what: str,
              sleep: Sleep = time.sleep) -> None:
    """BatchWriteItem of Put/DeleteRequests, every one of them applied."""
    for start in range(0, len(requests), WRITE_CHUNK):
        pending: Sequence[WriteRequestUnionTypeDef] = requests[start : start + WRITE_CHUNK]
        for round_no in range(ROUNDS + 1):
            with aws_errors(what):
                resp = ddb.batch_write_item(RequestItems={table: pending})
            pending = resp.get("UnprocessedItems", {}).get(table, [])
            if not pending:
                break
            _backoff(round_no, what, sleep)


def get_all(ddb: DynamoDBClient, table: str, keys: Sequence[Mapping[str, AttributeValueTypeDef]], what: str,
            sleep: Sleep = time.sleep, **options: Unpack[ReadOptions]) -> list[Item]:
    """BatchGetItem of every key (``options``: ConsistentRead, ProjectionExpression, ...); items in no order."""
    items: list[Item] = []
    for start in range(0, len(keys), GET_CHUNK):
        pending: Sequence[Mapping[str, AttributeValueTypeDef]] = keys[start : start + GET_CHUNK]
        for round_no in range(ROUNDS + 1):
            request: KeysAndAttributesTypeDef = {"Keys": pending, **options}
            with aws_errors(what):
                resp = ddb.batch_get_item(RequestItems={table: request})
            items.extend(resp.get("Responses", {}).get(table, []))
            unprocessed = resp.get("UnprocessedKeys", {}).get(table)
            pending = unprocessed["Keys"] if unprocessed else []
            if not pending:
                break
            _backoff(round_no, what, sleep)
    return items
