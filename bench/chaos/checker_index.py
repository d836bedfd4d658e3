"""The history checker's index: one pass over a fault run's history (bench/chaos/history.py) that files every
operation by subscription, key, message id and ack id, so that each rule (checker_rules.py, checker_exactly.py,
checker_seek.py) and the statistics (checker_stats.py) look things up instead of scanning.

Words the rules share:

- a key is *acknowledged on publish* when some Publish with outcome ok holds it; its *publish answer* is the
  earliest answered such Publish;
- a key *should reach* a subscription when the subscription's filter (attribute equalities, all must hold)
  matches the attributes it was published with; a dead-letter subscription should receive every key its
  source should (the harness nacks everything on a source, so everything ends on the dead-letter topic);
- an ack id is *confirmed* when an Ack answered ok holds it and does not name it refused; *refused* when an
  Ack or Modack answered with an error that names it (or names none), or answered ok but named it refused;
  *in doubt* when an Ack's outcome is unknown. An ack id's status is the best of these, in that order;
- a delivery's *lease* ends at its time plus the ack deadline, or later when a Modack extending it (ok or
  unknown) asked for more.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from bench.chaos.history import (
    ERROR,
    OK,
    PUSH,
    UNKNOWN,
    Ack,
    Deliver,
    End,
    Message,
    Modack,
    Op,
    Publish,
    Seek,
    Snapshot,
    Subscription,
    to_json,
)

CONFIRMED, REFUSED, IN_DOUBT = "confirmed", "refused", "in-doubt"
MAX_OPS = 5
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


@dataclass(frozen=True)
class Violation:
    """One broken guarantee: ``subject`` is the key, message id or ack id it concerns; ``evidence`` the few
    operations that show it (``ops`` gives them as the JSON objects of the history file; a publish shows only
    the message concerned)."""

    rule: str
    sub: str
    subject: str
    detail: str
    evidence: tuple[Op, ...]

    @property
    def ops(self) -> list[dict[str, Any]]:
        return [json.loads(to_json(op)) for op in self.evidence[:MAX_OPS]]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "sub": self.sub, "subject": self.subject, "detail": self.detail, "ops": self.ops}


def rfc3339_nanos(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time (all nine fraction digits kept), None when unreadable."""
    match = _RFC3339.match(text)
    if match is None:
        return None
    zone = "+00:00" if match[3] == "Z" else match[3]
    whole_seconds = (datetime.fromisoformat(match[1] + zone) - _EPOCH) // timedelta(seconds=1)
    fraction = (match[2] or "")[:9].ljust(9, "0")
    return whole_seconds * 1_000_000_000 + int(fraction)


def narrowed(publish: Publish, key: str) -> Publish:
    """The publish as evidence about one key: only that key's message (and its id), so that a batch of a
    thousand messages does not swell the report."""
    positions = [n for n, message in enumerate(publish.messages) if message.key == key]
    if not positions or len(publish.messages) == 1:
        return publish
    ids = tuple(publish.ids[n] for n in positions) if len(publish.ids) == len(publish.messages) else ()
    return replace(publish, messages=tuple(publish.messages[n] for n in positions), ids=ids)


def filter_matches(wanted: dict[str, str], attributes: dict[str, str]) -> bool:
    return all(attributes.get(name) == value for name, value in wanted.items())


def names_it(ack_id: str, refused: tuple[str, ...]) -> bool:
    return not refused or ack_id in refused


@dataclass(slots=True)
class AckIdLife:
    """Everything that happened to one ack id on one subscription."""

    delivery: Deliver | None = None
    confirms: tuple[Ack, ...] = ()  # by answer time
    refusals: tuple[Ack | Modack, ...] = ()
    doubts: tuple[Ack, ...] = ()
    first_ack_sent: float = float("inf")  # any outcome
    nacks: tuple[Modack, ...] = ()  # seconds 0 (any outcome) or any push Modack
    extensions: tuple[Modack, ...] = ()  # seconds > 0, ok or unknown

    @property
    def status(self) -> str:
        if self.confirms:
            return CONFIRMED
        if self.refusals:
            return REFUSED
        return IN_DOUBT if self.doubts else ""

    def lease_end(self, ack_deadline: float) -> float:
        assert self.delivery is not None
        ends = [self.delivery.t + ack_deadline, *(m.t + m.seconds for m in self.extensions)]
        return max(ends)

    def current_lease_end(self, ack_deadline: float) -> float:
        """When the lease surely ended: a confirmed modifyAckDeadline sets the deadline from its own time, and
        may shorten it (Google's semantics), so the last confirmed one decides; one in doubt after it may have
        moved it later. ``lease_end`` is the conservative bound the stale-ack rule uses instead."""
        assert self.delivery is not None
        modacks = sorted(self.extensions, key=lambda m: m.t_sent)
        confirmed = [m for m in modacks if m.outcome == OK]
        base = confirmed[-1].t + confirmed[-1].seconds if confirmed else self.delivery.t + ack_deadline
        since = confirmed[-1].t_sent if confirmed else float("-inf")
        after = [m.t + m.seconds for m in modacks if m.outcome != OK and m.t_sent > since]
        return max([base, *after])


@dataclass
class Index:
    subs: dict[str, Subscription] = field(default_factory=dict)
    dead_letter_subs: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # source -> subs
    messages: dict[str, Message] = field(default_factory=dict)  # key -> as first published
    first_publish: dict[str, Publish] = field(default_factory=dict)  # key -> first Publish holding it
    publish_answer: dict[str, Publish] = field(default_factory=dict)  # key -> earliest answered ok Publish
    key_ids: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # key -> Metro ids (source side)
    message_keys: dict[str, str] = field(default_factory=dict)  # message id (source side) -> key
    publish_times: dict[str, int] = field(default_factory=dict)  # message id (source side) -> ns
    stored: dict[str, Deliver] = field(default_factory=dict)  # key -> its first delivery anywhere
    deliveries: dict[str, list[Deliver]] = field(default_factory=lambda: defaultdict(list))  # sub -> by time
    by_key: dict[str, dict[str, list[Deliver]]] = field(default_factory=dict)  # sub -> key -> by time
    by_message: dict[str, dict[str, list[Deliver]]] = field(default_factory=dict)  # sub -> message id -> by time
    ack_ids: dict[str, dict[str, AckIdLife]] = field(default_factory=lambda: defaultdict(dict))  # sub -> id -> life
    seeks: dict[str, list[Seek]] = field(default_factory=lambda: defaultdict(list))  # sub -> by t_sent
    effective_seeks: dict[str, list[Seek]] = field(default_factory=dict)  # sub -> ok or unknown, by t_sent
    effective_seek_times: dict[str, list[float]] = field(default_factory=dict)  # sub -> their t_sent
    snapshots: dict[str, list[Snapshot]] = field(default_factory=lambda: defaultdict(list))  # name -> ok ones
    end: End | None = None

    @property
    def drained(self) -> bool:
        return self.end is not None and self.end.drained

    def life(self, sub: str, ack_id: str) -> AckIdLife:
        lives = self.ack_ids[sub]
        found = lives.get(ack_id)
        if found is None:
            found = lives[ack_id] = AckIdLife()
        return found

    def is_dead_letter(self, sub: str) -> bool:
        found = self.subs.get(sub)
        return found is not None and bool(found.dead_letter_of)

    def is_dead_letter_source(self, sub: str) -> bool:
        found = self.subs.get(sub)
        return found is not None and found.max_delivery_attempts > 0

    def published_attributes(self, key: str, fallback: dict[str, str]) -> dict[str, str]:
        message = self.messages.get(key)
        return message.attributes if message is not None else fallback

    def should_reach(self, sub: str, attributes: dict[str, str]) -> bool:
        """Whether a message published with these attributes belongs on ``sub`` (following dead-letter links)."""
        seen: set[str] = set()
        current = self.subs.get(sub)
        while current is not None and current.name not in seen:
            if not filter_matches(current.filter, attributes):
                return False
            seen.add(current.name)
            current = self.subs.get(current.dead_letter_of) if current.dead_letter_of else None
        return True

    def expected_keys(self, sub: str) -> set[str]:
        """Keys acknowledged on publish or stored (delivered somewhere) that should reach ``sub``."""
        candidates = self.publish_answer.keys() | self.stored.keys()
        return {key for key in candidates if self.should_reach(sub, self._attributes_of(key))}

    def _attributes_of(self, key: str) -> dict[str, str]:
        stored = self.stored.get(key)
        return self.published_attributes(key, stored.attributes if stored is not None else {})

    def seeks_sent_between(self, sub: str, after: float, before: float) -> list[Seek]:
        """Seeks on ``sub`` that may have happened (ok or unknown) sent strictly between two times."""
        effective = self.effective_seeks.get(sub)
        if not effective:
            return []
        sent = self.effective_seek_times[sub]
        return effective[bisect_right(sent, after) : bisect_left(sent, before)]


def build_index(ops: Iterable[Op]) -> Index:
    index = Index()
    for op in ops:
        _file(index, op)
    _finish(index)
    return index


def _file(index: Index, op: Op) -> None:
    if isinstance(op, Deliver):
        _file_delivery(index, op)
    elif isinstance(op, Ack):
        _file_ack(index, op)
    elif isinstance(op, Modack):
        _file_modack(index, op)
    elif isinstance(op, Publish):
        _file_publish(index, op)
    elif isinstance(op, Subscription):
        index.subs[op.name] = op
        if op.dead_letter_of:
            index.dead_letter_subs[op.dead_letter_of].append(op.name)
    elif isinstance(op, Seek):
        index.seeks[op.sub].append(op)
    elif isinstance(op, Snapshot):
        if op.outcome == OK:
            index.snapshots[op.name].append(op)
    else:
        index.end = op


def _file_publish(index: Index, op: Publish) -> None:
    for position, message in enumerate(op.messages):
        index.messages.setdefault(message.key, message)
        index.first_publish.setdefault(message.key, op)
        if op.outcome != OK:
            continue
        earlier = index.publish_answer.get(message.key)
        if earlier is None or op.t < earlier.t:
            index.publish_answer[message.key] = op
        if len(op.ids) == len(op.messages):
            index.key_ids[message.key].add(op.ids[position])
            index.message_keys[op.ids[position]] = message.key


def _file_delivery(index: Index, op: Deliver) -> None:
    index.deliveries[op.sub].append(op)
    index.stored.setdefault(op.key, op)
    index.life(op.sub, op.ack_id).delivery = op


def _file_ack(index: Index, op: Ack) -> None:
    for ack_id in op.ack_ids:
        life = index.life(op.sub, ack_id)
        life.first_ack_sent = min(life.first_ack_sent, op.t_sent)
        if op.outcome == OK and ack_id not in op.refused:
            life.confirms += (op,)
        elif (op.outcome == ERROR and names_it(ack_id, op.refused)) or op.outcome == OK:
            life.refusals += (op,)
        elif op.outcome == UNKNOWN:
            life.doubts += (op,)


def _file_modack(index: Index, op: Modack) -> None:
    for ack_id in op.ack_ids:
        life = index.life(op.sub, ack_id)
        if op.seconds == 0 or op.edge == PUSH:
            life.nacks += (op,)
        elif op.outcome != ERROR:
            life.extensions += (op,)
        if op.outcome == ERROR and names_it(ack_id, op.refused):
            life.refusals += (op,)


def _finish(index: Index) -> None:
    """Time-order what the rules walk, and learn each source-side message id's key and publish time."""
    for sub, delivered in index.deliveries.items():
        delivered.sort(key=lambda d: d.t)
        keys: dict[str, list[Deliver]] = defaultdict(list)
        message_ids: dict[str, list[Deliver]] = defaultdict(list)
        for delivery in delivered:
            keys[delivery.key].append(delivery)
            message_ids[delivery.message_id].append(delivery)
        index.by_key[sub], index.by_message[sub] = keys, message_ids
        if not index.is_dead_letter(sub):
            _learn_source_ids(index, delivered)
    for sub, seeks in index.seeks.items():
        seeks.sort(key=lambda s: s.t_sent)
        index.effective_seeks[sub] = [s for s in seeks if s.outcome != ERROR]
        index.effective_seek_times[sub] = [s.t_sent for s in index.effective_seeks[sub]]
    for lives in index.ack_ids.values():
        for life in lives.values():
            if len(life.confirms) > 1:
                life.confirms = tuple(sorted(life.confirms, key=lambda a: a.t))


def _learn_source_ids(index: Index, delivered: list[Deliver]) -> None:
    for delivery in delivered:
        index.key_ids[delivery.key].add(delivery.message_id)
        index.message_keys.setdefault(delivery.message_id, delivery.key)
        if delivery.publish_time and delivery.message_id not in index.publish_times:
            nanos = rfc3339_nanos(delivery.publish_time)
            if nanos is not None:
                index.publish_times[delivery.message_id] = nanos
