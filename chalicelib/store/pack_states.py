"""The state of packs some request settled only in part (core/queueing/packs.py), in the leases table.

Item ``sub`` + ``lease`` = ``p#{queue gen}#{pack's SQS message id}``: ``done`` (a number set of indexes:
acknowledged, or sent back on their own) and ``nacked`` (a string set of ``lease:index``). A pack settled
whole by one request never has an item. Items expire with the subscription's retention, like the pack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chalicelib.config import Config
from chalicelib.core.queueing.packs import PackState
from chalicelib.store import aws, batch
from chalicelib.store.errors import aws_errors


def _state(item: dict[str, Any]) -> PackState:
    return PackState(frozenset(int(n) for n in item.get("done", {}).get("NS", [])),
                     frozenset(item.get("nacked", {}).get("SS", [])))


class PackStates:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.leases_table

    @staticmethod
    def _key(sub: str, gen: int, pack: str) -> dict[str, Any]:
        return {"sub": {"S": sub}, "lease": {"S": f"p#{gen}#{pack}"}}

    def get(self, sub: str, gen: int, packs: Sequence[str]) -> dict[str, PackState]:
        """The state of each pack that has one (strongly consistent BatchGetItem)."""
        keys = [self._key(sub, gen, p) for p in dict.fromkeys(packs)]
        items = batch.get_all(self._ddb, self._table, keys, "pack states", ConsistentRead=True,
                              ProjectionExpression="lease, done, nacked")
        return {item["lease"]["S"].split("#", 2)[2]: _state(item) for item in items}

    def record(self, sub: str, gen: int, pack: str, expires: int, done: Sequence[int] = (),
               nacked: Sequence[str] = ()) -> PackState:
        """Add settled indexes and nacked ``lease:index`` tags to a pack's state; returns the whole state."""
        parts: list[str] = []
        values: dict[str, Any] = {":x": {"N": str(expires)}}
        if done:
            parts.append("done :d")
            values[":d"] = {"NS": [str(i) for i in sorted(set(done))]}
        if nacked:
            parts.append("nacked :n")
            values[":n"] = {"SS": sorted(set(nacked))}
        with aws_errors("pack state (DynamoDB UpdateItem)"):
            resp = self._ddb.update_item(
                TableName=self._table, Key=self._key(sub, gen, pack),
                UpdateExpression="ADD " + ", ".join(parts) + " SET #ttl = :x",
                ExpressionAttributeNames={"#ttl": "ttl"}, ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW")
        return _state(resp.get("Attributes", {}))
