"""DynamoDB batch helpers: chunking and the retry of unprocessed items (a fake client, no AWS)."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.core.errors import Unavailable
from chalicelib.store import batch


class FakeDdb:
    """Leaves the last item of each call unprocessed ``stubborn`` times."""

    def __init__(self, stubborn: int) -> None:
        self.stubborn = stubborn
        self.calls: list[int] = []
        self.written: list[dict[str, Any]] = []

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        (table, reqs), = RequestItems.items()
        self.calls.append(len(reqs))
        if self.stubborn:
            self.stubborn -= 1
            self.written += reqs[:-1]
            return {"UnprocessedItems": {table: reqs[-1:]}}
        self.written += reqs
        return {}

    def batch_get_item(self, RequestItems: dict[str, dict[str, Any]]) -> dict[str, Any]:
        (table, spec), = RequestItems.items()
        keys = spec["Keys"]
        self.calls.append(len(keys))
        if self.stubborn:
            self.stubborn -= 1
            return {"Responses": {table: keys[:-1]}, "UnprocessedKeys": {table: {"Keys": keys[-1:]}}}
        return {"Responses": {table: keys}}


class Pauses(list[float]):
    """An injected sleep that records the pauses instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_writes_are_chunked_and_unprocessed_items_retried() -> None:
    ddb, pauses = FakeDdb(stubborn=2), Pauses()
    requests = [{"PutRequest": {"Item": {"k": {"S": str(i)}}}} for i in range(30)]
    batch.write_all(ddb, "t", requests, "test", sleep=pauses)
    assert ddb.calls == [25, 1, 1, 5]
    assert pauses == [0.05, 0.1]  # one pause before each retry, doubling
    assert sorted(r["PutRequest"]["Item"]["k"]["S"] for r in ddb.written) == sorted(str(i) for i in range(30))


def test_gets_are_chunked_and_unprocessed_keys_retried() -> None:
    ddb = FakeDdb(stubborn=1)
    keys = [{"k": {"S": str(i)}} for i in range(150)]
    items = batch.get_all(ddb, "t", keys, "test", sleep=Pauses(), ConsistentRead=True)
    assert ddb.calls == [100, 1, 50]
    assert sorted(i["k"]["S"] for i in items) == sorted(str(i) for i in range(150))


def test_items_that_stay_unprocessed_fail_instead_of_vanishing() -> None:
    ddb, pauses = FakeDdb(stubborn=100), Pauses()
    with pytest.raises(Unavailable):
        batch.write_all(ddb, "t", [{"DeleteRequest": {"Key": {"k": {"S": "x"}}}}], "test",
                        sleep=pauses)
    assert len(pauses) == batch.ROUNDS and ddb.calls == [1] * (batch.ROUNDS + 1)
