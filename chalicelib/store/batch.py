"""DynamoDB batch calls done completely: chunked to the API's limits, unprocessed items retried with backoff."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from chalicelib.core.errors import Unavailable
from chalicelib.store.errors import aws_errors

WRITE_CHUNK = 25  # BatchWriteItem's limit
GET_CHUNK = 100  # BatchGetItem's limit
ROUNDS = 8  # unprocessed items are retried this many times, 50 ms doubling (about 6 s in all)


def _backoff(round_no: int, what: str) -> None:
    if round_no >= ROUNDS:
        raise Unavailable(f"DynamoDB left part of {what} unprocessed; retry.")
    time.sleep(0.05 * 2**round_no)


def write_all(ddb: Any, table: str, requests: Sequence[dict[str, Any]], what: str) -> None:
    """BatchWriteItem of Put/DeleteRequests, every one of them applied."""
    for start in range(0, len(requests), WRITE_CHUNK):
        pending = list(requests[start : start + WRITE_CHUNK])
        for round_no in range(ROUNDS + 1):
            with aws_errors(what):
                resp = ddb.batch_write_item(RequestItems={table: pending})
            pending = list(resp.get("UnprocessedItems", {}).get(table, []))
            if not pending:
                break
            _backoff(round_no, what)


def get_all(ddb: Any, table: str, keys: Sequence[dict[str, Any]], what: str, **options: Any) -> list[dict[str, Any]]:
    """BatchGetItem of every key (``options``: ConsistentRead, ProjectionExpression, ...); items in no order."""
    items: list[dict[str, Any]] = []
    for start in range(0, len(keys), GET_CHUNK):
        pending = list(keys[start : start + GET_CHUNK])
        for round_no in range(ROUNDS + 1):
            with aws_errors(what):
                resp = ddb.batch_get_item(RequestItems={table: {"Keys": pending, **options}})
            items.extend(resp.get("Responses", {}).get(table, []))
            pending = list(resp.get("UnprocessedKeys", {}).get(table, {}).get("Keys", []))
            if not pending:
                break
            _backoff(round_no, what)
    return items
