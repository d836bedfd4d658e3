"""How the stream's fan-out spreads a wide topic's subscriptions over parallel slices (docs/decisions/wide-fanout.md).

Pure: which subscriptions stay in the topic's stream lane, how the others are cut into slices, each slice's
identity (what the completion record counts), and the slice event's JSON shape (an asynchronous invocation of the
fan-out function carries one slice: the publish request's log entry and the slice's subscription records).

Subscriptions that order by key stay in the lane: the stream hands a topic's records over one after another, so
the lane's sends for record n end before record n+1's begin; parallel invocations promise no such order.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from chalicelib.core.queueing import sqs_batches
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.core.wire.models import Subscription

T = TypeVar("T")
SLICE_EVENT = "fanoutSlice"  # the key of a slice event: the fan-out function tells it from a stream batch by it
# A slice event's subscription records, at most (Lambda accepts asynchronous payloads of 256 KiB, and 1 MiB since
# late 2025; the log entry and the JSON around the records stay well under the difference).
MAX_SLICE_BYTES = 200_000


Record = dict[str, Any]  # a subscription record's JSON shape in a slice event
Encode = Callable[[SubscriptionRecord], tuple[Record, int]]  # a record's JSON shape and its encoded size


@dataclass(frozen=True)
class Cut:
    """One slice: its subscriptions, their JSON shapes and its id (:func:`slice_id`)."""

    subs: list[SubscriptionRecord]
    records: list[Record]
    id: str

    @classmethod
    def of(cls, pairs: Sequence[tuple[SubscriptionRecord, tuple[Record, int]]]) -> Cut:
        subs = [s for s, _ in pairs]
        return cls(subs, [e[0] for _, e in pairs], slice_id(subs))


@dataclass(frozen=True)
class Split:
    """One publish request's subscriptions: those the lane serves itself, and the slices handed out."""

    in_lane: list[SubscriptionRecord]
    slices: list[Cut]


def encoded(rec: SubscriptionRecord) -> tuple[Record, int]:
    data = record_json(rec)
    return data, len(json.dumps(data))


def split(subs: Sequence[SubscriptionRecord], per_slice: int, max_bytes: int = MAX_SLICE_BYTES,
          encode: Encode = encoded) -> Split:
    """Every subscription in the lane when there are at most ``per_slice`` of them (or ``per_slice`` is 0: slicing
    off); otherwise the ordered ones in the lane and the rest in slices of at most ``per_slice`` records and
    ``max_bytes`` of encoded records each, in the given order. ``encode`` may remember what it encoded (a batch's
    records share one subscription list)."""
    if per_slice <= 0 or len(subs) <= per_slice:
        return Split(list(subs), [])
    ordered = [s for s in subs if s.spec.enable_message_ordering]
    spread = [(s, encode(s)) for s in subs if not s.spec.enable_message_ordering]
    groups = chunks(spread, per_slice, max_bytes, lambda pair: pair[1][1])
    return Split(ordered, [Cut.of(g) for g in groups])


def chunks(items: Sequence[T], max_count: int, max_bytes: int, size: Callable[[T], int]) -> list[list[T]]:
    """Consecutive items in groups of at most ``max_count`` and ``max_bytes`` (an item larger than ``max_bytes``
    goes alone): the planning of SendMessageBatch requests, over any sized items."""
    plan = sqs_batches.plan([size(item) for item in items], max_entries=max_count, max_bytes=max_bytes)
    return [[items[i] for i in group] for group in plan]


def slice_id(subs: Sequence[SubscriptionRecord]) -> str:
    """A slice's identity: a digest of its subscriptions' names and queue generations. The same slice cut again
    (a stream retry over the same subscriptions) has the same id; a different cut has another."""
    text = "\n".join(f"{s.name} {s.queue_gen}" for s in subs)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# -- the slice event ----------------------------------------------------------------------------------------------


def record_json(rec: SubscriptionRecord) -> Record:
    return {"doc": rec.spec.model_dump_json(by_alias=True, exclude_none=True), "created": rec.created,
            "queue_url": rec.queue_url, "queue_gen": rec.queue_gen}


def record_from_json(data: Record) -> SubscriptionRecord:
    return SubscriptionRecord(Subscription.model_validate_json(data["doc"]), float(data["created"]),
                              str(data["queue_url"]), int(data["queue_gen"]))


def entry_json(entry: LogEntry) -> dict[str, Any]:
    """Every field of the entry as JSON (the raw bytes, when the log item holds them, in base64)."""
    data = dataclasses.asdict(entry)
    data["inline"] = base64.b64encode(entry.inline).decode() if entry.inline is not None else None
    return data


def entry_from_json(data: dict[str, Any]) -> LogEntry:
    known = {f.name for f in dataclasses.fields(LogEntry)}
    values = {k: v for k, v in data.items() if k in known}
    if values.get("inline") is not None:
        values["inline"] = base64.b64decode(values["inline"])
    return LogEntry(**values)


@dataclass(frozen=True)
class Slice:
    """One slice's work: send ``entry``'s messages to ``subs``, then count slice ``id`` done."""

    entry: LogEntry
    subs: list[SubscriptionRecord]
    id: str


def slice_event(entry: LogEntry, cut: Cut) -> dict[str, Any]:
    return {SLICE_EVENT: {"id": cut.id, "entry": entry_json(entry), "subscriptions": cut.records}}


def is_slice_event(event: dict[str, Any]) -> bool:
    return isinstance(event.get(SLICE_EVENT), dict)


def parse_slice_event(event: dict[str, Any]) -> Slice:
    body = event[SLICE_EVENT]
    return Slice(entry_from_json(body["entry"]), [record_from_json(s) for s in body["subscriptions"]],
                 str(body["id"]))
