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

    def publish_acknowledged(self, keys: list[str], attributes: list[dict[str, str]] | None = None) -> None:
        self.publish_calls += 1
        self.published.update(keys)
        for book in self.books.values():
            if book.filter:
                book.expected.update(key for key, attrs in zip(keys, attributes or [{}] * len(keys), strict=True)
                                     if all(attrs.get(k) == v for k, v in book.filter.items()))

    def _expected(self, book: SubscriptionBook) -> set[str]:
        return book.expected if book.filter else self.published

    def delivered(self, sub: str, message_id: str, key: str, ordering_key: str = "", seq: int = 0) -> None:
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
        return all(self._expected(b) <= (b.acked | b.unsure) for b in self.books.values())

    def verdict(self, sub: str) -> SubscriptionVerdict:
        book = self.books[sub]
        expected = self._expected(book)
        return SubscriptionVerdict(
            kind=book.kind,
            deliveries=book.deliveries,
            delivered_keys=len(book.first),
            lost=len(expected - book.first),
            stuck=len((expected & book.first) - book.acked - book.unsure),
            unconfirmed=len(book.unsure - book.acked),
            duplicates=book.deliveries - len(book.first),
            redeliveries=book.deliveries - len(book.seen_ids),
            after_ack=book.after_ack,
            order_violations=book.order_violations,
            examples=list(book.examples),
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
