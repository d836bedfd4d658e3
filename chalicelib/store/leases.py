"""The leases table: exactly-once delivery state and skipped-receive counts, both keyed ``sub`` + ``lease``.

Pull responses have no item of their own (docs/decisions/lease-item.md): SQS's visibility timeout is the
lease of an at-least-once delivery.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.store import aws, batch
from chalicelib.store.errors import aws_errors, code_of
from chalicelib.store.workers import Workers

T = TypeVar("T")
R = TypeVar("R")


def exact_key(gen: int, message_id: str) -> str:
    """The exactly-once state of a message in one queue generation: a seek starts a new generation, so each
    restored message is delivered (and acknowledged) once per seek."""
    return f"{gen}#{message_id}"


class ExactLeases:
    """Per-message delivery state for exactly-once subscriptions (item ``lease`` = ``m#{queue gen}#{message id}``,
    the ``mid`` of these methods being :func:`exact_key`).

    ``st`` is ``leased`` or ``acked``; ``tok`` the token of the delivery holding it; ``deadline``
    when that delivery expires. Every transition is one conditional UpdateItem, so of two racing
    pullers only one holds a message, and an ack with a stale token or after its deadline fails.
    """

    def __init__(self, config: Config, workers: Workers) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.leases_table
        self._workers = workers

    def _update(self, sub: str, mid: str, expr: str, cond: str, values: dict[str, Any]) -> dict[str, Any] | None:
        """Run a conditional update; None on success, else the item as it was (possibly empty)."""
        ok, item = self._write(sub, mid, expr, cond, values)
        return None if ok else item

    def _write(self, sub: str, mid: str, expr: str, cond: str, values: dict[str, Any],
               returns: str = "NONE") -> tuple[bool, dict[str, Any]]:
        """Run a conditional update: (True, the attributes ``returns`` asks for) on success, else (False, the item
        as it was, possibly empty).

        Each update also writes a fresh request id (``req``). botocore retries a write whose answer was lost
        (a timeout, a 500 after the write); the retry then fails its condition against the item the first
        attempt wrote. That item carries this call's request id, so the update did succeed (and the item as it
        is now stands for what it returns).
        """
        request = uuid.uuid4().hex
        extra: dict[str, Any] = {"ExpressionAttributeNames": {"#ttl": "ttl"}} if "#ttl" in expr else {}
        try:
            with aws_errors("exactly-once lease"):
                resp = self._ddb.update_item(
                    TableName=self._table, Key={"sub": {"S": sub}, "lease": {"S": f"m#{mid}"}},
                    UpdateExpression=f"{expr}, req = :req", ConditionExpression=cond,
                    ExpressionAttributeValues={**values, ":req": {"S": request}},
                    ReturnValuesOnConditionCheckFailure="ALL_OLD", ReturnValues=returns,  # type: ignore[arg-type]
                    **extra,
                )
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                response: dict[str, Any] = dict(exc.response)
                old = dict(response.get("Item") or {})
                return old.get("req", {}).get("S") == request, old
            raise
        return True, dict(resp.get("Attributes") or {})

    def each(self, transition: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``transition`` (one conditional write) of every item, concurrently; results in the items' order.

        One after another, a pull of 100 messages took 100 round trips, which on a busy machine outlasted
        clients' timeouts (found by the fault run, make chaos)."""
        return self._workers.map(aws.in_callers_part(transition), items)

    def claim(self, sub: str, mid: str, token: str, deadline: float, now: float, expires: int) -> str:
        """Lease a message for one delivery: ``ok``, ``acked`` (never deliver again) or ``held``."""
        old = self._update(
            sub, mid, "SET st = :leased, tok = :t, deadline = :d, #ttl = :x",
            "attribute_not_exists(lease) OR (st = :leased AND deadline < :now)",
            {":leased": {"S": "leased"}, ":t": {"S": token}, ":d": {"N": repr(deadline)},
             ":now": {"N": repr(now)}, ":x": {"N": str(expires)}}
        )
        if old is None:
            return "ok"
        return "acked" if old.get("st", {}).get("S") == "acked" else "held"

    def ack(self, sub: str, mid: str, token: str, now: float) -> bool:
        return self._update(sub, mid, "SET st = :acked", "st = :leased AND tok = :t AND deadline >= :now",
                            {":acked": {"S": "acked"}, ":leased": {"S": "leased"}, ":t": {"S": token},
                             ":now": {"N": repr(now)}}) is None

    # -- packs: one lease for the messages of one queue message (core/queueing/packs.py) ---------------------------
    def claim_pack(self, sub: str, key: str, token: str, deadline: float, now: float,
                   expires: int) -> tuple[bool, set[int]]:
        """Lease a pack for one delivery: (whether this delivery holds it, the indexes acknowledged already)."""
        ok, item = self._write(
            sub, key, "SET st = :leased, tok = :t, deadline = :d, #ttl = :x",
            "attribute_not_exists(lease) OR deadline < :now",
            {":leased": {"S": "leased"}, ":t": {"S": token}, ":d": {"N": repr(deadline)}, ":now": {"N": repr(now)},
             ":x": {"N": str(expires)}}, returns="ALL_NEW")
        return ok, {int(i) for i in item.get("acked", {}).get("NS", [])} if ok else set()

    def ack_pack(self, sub: str, key: str, token: str, indexes: set[int], now: float) -> set[int] | None:
        """Acknowledge messages of a pack held by ``token``; the indexes that were acknowledged before (their ack
        fails), or None if the delivery no longer holds the pack."""
        ok, item = self._write(sub, key, "ADD acked :i SET st = :leased", "tok = :t AND deadline >= :now",
                               {":i": {"NS": [str(i) for i in sorted(indexes)]}, ":leased": {"S": "leased"},
                                ":t": {"S": token}, ":now": {"N": repr(now)}}, returns="UPDATED_OLD")
        return {int(i) for i in item.get("acked", {}).get("NS", [])} & indexes if ok else None

    def extend(self, sub: str, mid: str, token: str, deadline: float, now: float) -> bool:
        return self._update(sub, mid, "SET deadline = :d", "st = :leased AND tok = :t AND deadline >= :now",
                            {":d": {"N": repr(deadline)}, ":leased": {"S": "leased"}, ":t": {"S": token},
                             ":now": {"N": repr(now)}}) is None


class SkipStore:
    """Receives of a message that were not deliveries (item ``lease`` = ``s#{queue gen}#{message id}``).

    SQS counts every receive in ApproximateReceiveCount, also the ones Metro hands back without
    delivering (a push batch deferred by flow control, the rest of an ordering key behind a nack, an
    exactly-once message another puller holds). ``skips`` counts those, so that
    deliveryAttempt = ApproximateReceiveCount - skips. Only messages received more than once are
    read, and only subscriptions that report or use the attempt (dead-letter or retry policy) keep it.
    """

    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.leases_table

    @staticmethod
    def _key(sub: str, gen: int, mid: str) -> dict[str, Any]:
        return {"sub": {"S": sub}, "lease": {"S": f"s#{gen}#{mid}"}}

    def get(self, sub: str, gen: int, mids: list[str]) -> dict[str, int]:
        """Skips per message id (absent = 0): strongly consistent BatchGetItem."""
        keys = [self._key(sub, gen, m) for m in dict.fromkeys(mids)]
        items = batch.get_all(self._ddb, self._table, keys, "attempt counts", ConsistentRead=True,
                              ProjectionExpression="lease, skips")
        return {item["lease"]["S"].split("#", 2)[2]: int(item["skips"]["N"]) for item in items}

    def put(self, sub: str, gen: int, skips: dict[str, int], expires: int) -> None:
        """Store new skip counts (BatchWriteItem)."""
        batch.write_all(self._ddb, self._table, [
            {"PutRequest": {"Item": {**self._key(sub, gen, mid), "skips": {"N": str(n)}, "ttl": {"N": str(expires)}}}}
            for mid, n in skips.items()], "attempt counts")
