"""The fault run's accounting, pure: what was acknowledged on publish, what each subscription delivered and
what its acknowledgements confirmed, and the verdicts drawn from them.

Messages are known by their *key* (an attribute the publisher sets, unique per message it means to send) and
by Metro's message id. A publish retried after a lost answer may store a message twice: two ids, one key.

Per subscription:
- **lost**: keys acknowledged on publish that the subscription never delivered (must be 0);
- **stuck**: keys delivered but never acknowledged, with no acknowledgement in doubt either, and not delivered
  again: a message the subscription dropped (must be 0 once the run drained);
- **unconfirmed**: keys whose acknowledgement went out but whose answer was lost (the API died meanwhile) or
  refused as expired or already acknowledged, and that were not acknowledged later: acknowledged or not,
  the subscriber cannot tell; the fault run reports them, and the subscription's backlog after the drain
  says whether any of them are still there;
- **acked by seek**: keys a seek to a time may have acknowledged, neither delivered nor acknowledged by the
  subscriber since: Google's seek marks every message published before that time acknowledged, delivered or
  not. A key counts when its publish time (the latest of its deliveries anywhere) is before the seek's time
  and its first publish was sent before the seek answered (ok or unknown); such keys are owed nothing more;
- **duplicates**: deliveries beyond the first of each key (at-least-once allows them; counted);
- **after_ack**: deliveries of a message id whose acknowledgement had already been confirmed (0 on an
  exactly-once subscription: Google's guarantee);
- **order_violations** (ordered subscriptions): a key delivered for the first time while a later message of
  its ordering key had already been delivered. Redeliveries (after a nack or an expired deadline, which
  Google allows to replay the messages after it) and the copies of a retried publish are not first
  deliveries, so they never count.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.chaos.checker_index import rfc3339_nanos

PULL, ORDERED, EXACTLY_ONCE, PUSH = "pull", "ordered", "exactly-once", "push"
MAX_EXAMPLES = 10


@dataclass
class SubscriptionBook:
    kind: str
    deliveries: int = 0
    first: set[str] = field(default_factory=set)  # keys delivered at least once
    acked: set[str] = field(default_factory=set)  # keys whose acknowledgement was confirmed
    unsure: set[str] = field(default_factory=set)  # keys whose acknowledgement went out unconfirmed
    settled: set[str] = field(default_factory=set)  # acked | unsure, kept for flow control
    seen_ids: set[str] = field(default_factory=set)
    acked_ids: set[str] = field(default_factory=set)
    after_ack: int = 0
    order_violations: int = 0
    last_seq: dict[str, int] = field(default_factory=dict)  # ordering key -> highest sequence first-delivered
    examples: list[str] = field(default_factory=list)  # the first few order violations, for the report
    filter: dict[str, str] = field(default_factory=dict)  # attribute equalities: the keys this book expects
    expected: set[str] = field(default_factory=set)  # the published keys its filter matches (when it has one)
    time_seeks: list[tuple[int, float]] = field(default_factory=list)  # (target ns, answered) of seeks to a time
    seek_acked: set[str] = field(default_factory=set)  # keys a seek to a time may have acknowledged


@dataclass
class SubscriptionVerdict:
    kind: str
    deliveries: int
    delivered_keys: int
    lost: int
    stuck: int
    unconfirmed: int
    duplicates: int
    redeliveries: int
    after_ack: int
    order_violations: int
    examples: list[str]
    acked_by_seek: int = 0

    @property
    def passed(self) -> bool:
        ok = self.lost == 0 and self.stuck == 0 and self.order_violations == 0
        return ok and (self.kind != EXACTLY_ONCE or self.after_ack == 0)


class Ledger:
    """Not thread-safe: the driver holds a lock around every call. A book with a filter expects only the published
    keys whose attributes match it."""

    def __init__(self, subscriptions: dict[str, str], filters: dict[str, dict[str, str]] | None = None) -> None:
        filters = filters or {}
        self.books = {name: SubscriptionBook(kind, filter=dict(filters.get(name, {})))
                      for name, kind in subscriptions.items()}
        self.published: set[str] = set()
        self.publish_calls = 0
        self.first_sent: dict[str, float] = {}  # key -> when its first publish was sent (harness seconds)
        self.publish_nanos: dict[str, int] = {}  # key -> its latest publish time seen on a delivery

    def publish_acknowledged(self, keys: list[str], attributes: list[dict[str, str]] | None = None,
                             sent: float = 0.0) -> None:
        """``sent``: when the first attempt of this publish went out."""
        self.publish_calls += 1
        self.published.update(keys)
        for key in keys:
            self.first_sent.setdefault(key, sent)
            self._settle_by_seeks(key)
        for book in self.books.values():
            if book.filter:
                book.expected.update(key for key, attrs in zip(keys, attributes or [{}] * len(keys), strict=True)
                                     if all(attrs.get(k) == v for k, v in book.filter.items()))

    def _expected(self, book: SubscriptionBook) -> set[str]:
        return book.expected if book.filter else self.published

    def seeked_to_time(self, sub: str, time: str, answered: float) -> None:
        """A seek of ``sub`` to ``time`` (RFC 3339) answered ok or unknown at ``answered``."""
        target = rfc3339_nanos(time)
        book = self.books.get(sub)
        if target is None or book is None:
            return
        book.time_seeks.append((target, answered))
        for key in self.first_sent:
            self._settle(book, key)

    def _settle_by_seeks(self, key: str) -> None:
        for book in self.books.values():
            if book.time_seeks:
                self._settle(book, key)

    def _settle(self, book: SubscriptionBook, key: str) -> None:
        nanos, sent = self.publish_nanos.get(key), self.first_sent.get(key)
        if nanos is not None and sent is not None and any(nanos < target and sent < answered
                                                           for target, answered in book.time_seeks):
            book.seek_acked.add(key)
            book.settled.add(key)
        else:
            book.seek_acked.discard(key)  # a later copy of the key, published after the seek's time, is owed

    def delivered(self, sub: str, message_id: str, key: str, ordering_key: str = "", seq: int = 0,
                  publish_time: str = "") -> None:
        """``publish_time``: the message's, on its source topic (never a forward's)."""
        nanos = rfc3339_nanos(publish_time) if publish_time else None
        if nanos is not None and nanos > self.publish_nanos.get(key, -1):
            self.publish_nanos[key] = nanos
            self._settle_by_seeks(key)
        book = self.books[sub]
        book.deliveries += 1
        if message_id in book.acked_ids:
            book.after_ack += 1
        book.seen_ids.add(message_id)
        if key in book.first:
            return
        book.first.add(key)
        if book.kind == ORDERED and ordering_key:
            if seq < book.last_seq.get(ordering_key, -1):
                book.order_violations += 1
                if len(book.examples) < MAX_EXAMPLES:
                    book.examples.append(f"{ordering_key}: {key} (seq {seq}) first delivered after seq "
                                         f"{book.last_seq[ordering_key]}")
            book.last_seq[ordering_key] = max(seq, book.last_seq.get(ordering_key, -1))

    def acknowledged(self, sub: str, message_id: str, key: str) -> None:
        """The subscription confirmed this acknowledgement (a 2xx to acknowledge, or to a push)."""
        book = self.books[sub]
        book.acked.add(key)
        book.settled.add(key)
        book.acked_ids.add(message_id)

    def acknowledge_unconfirmed(self, sub: str, key: str) -> None:
        """An acknowledgement of ``key`` went out and its answer was lost or refused."""
        self.books[sub].unsure.add(key)
        self.books[sub].settled.add(key)

    def outstanding(self) -> int:
        """About how many published keys the slowest subscription has not settled yet (flow control; O(1)). An
        unconfirmed acknowledgement counts as settled: such a message may never come back, and counting it as
        outstanding would stall the publishers once the unconfirmed ones filled the window."""
        return max((len(self._expected(b)) - len(b.settled) for b in self.books.values()), default=0)

    def drained(self) -> bool:
        """Every published key was acknowledged (or its acknowledgement went out) on every subscription."""
        return all(self._expected(b) <= (b.acked | b.unsure | b.seek_acked) for b in self.books.values())

    def verdict(self, sub: str) -> SubscriptionVerdict:
        book = self.books[sub]
        expected = self._expected(book)
        return SubscriptionVerdict(
            kind=book.kind,
            deliveries=book.deliveries,
            delivered_keys=len(book.first),
            lost=len(expected - book.first - book.seek_acked),
            stuck=len((expected & book.first) - book.acked - book.unsure - book.seek_acked),
            unconfirmed=len(book.unsure - book.acked),
            duplicates=book.deliveries - len(book.first),
            redeliveries=book.deliveries - len(book.seen_ids),
            after_ack=book.after_ack,
            order_violations=book.order_violations,
            examples=list(book.examples),
            acked_by_seek=len(book.seek_acked - book.acked - book.unsure),
        )

    def verdicts(self) -> dict[str, SubscriptionVerdict]:
        return {sub: self.verdict(sub) for sub in self.books}

    def summary(self) -> dict[str, Any]:
        verdicts = self.verdicts()
        return {
            "published_keys": len(self.published),
            "publish_calls": self.publish_calls,
            "passed": all(v.passed for v in verdicts.values()),
            "subscriptions": {sub: {**asdict(v), "passed": v.passed} for sub, v in verdicts.items()},
        }
