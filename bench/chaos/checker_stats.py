"""The history checker's per-subscription statistics (words as in checker_index.py), drawn drained or not.

Counts: deliveries, distinct keys delivered, duplicates (deliveries beyond the first of each key) and their rate
per 1,000 distinct keys, and ack ids by status (confirmed, refused, in doubt).

Each duplicate gets the first cause that fits, looking at the earlier deliveries of its key on the subscription:

- ``publish-retry``: it carries another message id than the key's first delivery (a retried publish stored it
  twice);
- ``seek``: a seek (ok or unknown) was sent on the subscription between the previous delivery and this one;
- ``nack``: an earlier delivery's ack id had been nacked (a Modack to 0 s or a push Modack, any outcome) before;
- ``ack-lost``: an earlier delivery's ack had been sent and ended refused or in doubt;
- ``expired``: an earlier delivery's lease (ack deadline and extensions) ended with no Ack sent for it, before
  this delivery (within the skew tolerance);
- ``after-ack``: an earlier delivery's ack had been confirmed before (an at-least-once redelivery);
- ``copy``: none of these, so the earlier delivery of the same message was still held, unacknowledged, when
  this one came: a second copy of it was in the queue (a fan-out send repeated after a lost answer, a publish
  fanned out both directly and by the stream, or a standard queue's own occasional second copy).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.chaos.checker_index import CONFIRMED, IN_DOUBT, REFUSED, AckIdLife, Index
from bench.chaos.history import Ack, Deliver, Subscription

CAUSES = ("publish-retry", "seek", "nack", "ack-lost", "expired", "after-ack", "copy")
NEVER = float("inf")


@dataclass
class SubStats:
    deliveries: int = 0
    keys_delivered: int = 0
    duplicates: int = 0
    duplicates_per_1000_keys: float = 0.0
    acks_confirmed: int = 0
    acks_refused: int = 0
    acks_in_doubt: int = 0
    duplicate_causes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    keys_judged: int = 0  # keys the drained rules judged (0 when the run did not drain)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class _EarlierDeliveries:
    """The earliest time each cause became true for the deliveries of one key seen so far."""

    first_message_id: str
    previous_t: float
    nacked: float = NEVER
    ack_lost: float = NEVER
    expired: float = NEVER
    acked: float = NEVER


def sub_stats(index: Index, sub: Subscription, skew_tolerance: float) -> SubStats:
    delivered = index.deliveries.get(sub.name, [])
    stats = SubStats(deliveries=len(delivered), keys_delivered=len(index.by_key.get(sub.name, {})))
    stats.duplicates = stats.deliveries - stats.keys_delivered
    if stats.keys_delivered:
        stats.duplicates_per_1000_keys = round(stats.duplicates * 1000 / stats.keys_delivered, 3)
    statuses = [life.status for life in index.ack_ids.get(sub.name, {}).values()]
    stats.acks_confirmed, stats.acks_refused = statuses.count(CONFIRMED), statuses.count(REFUSED)
    stats.acks_in_doubt = statuses.count(IN_DOUBT)
    _count_causes(index, sub, skew_tolerance, stats.duplicate_causes)
    return stats


def _count_causes(index: Index, sub: Subscription, skew_tolerance: float, causes: dict[str, int]) -> None:
    lives = index.ack_ids.get(sub.name, {})
    earlier: dict[str, _EarlierDeliveries] = {}
    for delivery in index.deliveries.get(sub.name, []):
        seen = earlier.get(delivery.key)
        if seen is None:
            seen = earlier[delivery.key] = _EarlierDeliveries(delivery.message_id, delivery.t)
        else:
            causes[_cause(index, sub.name, delivery, seen, skew_tolerance)] += 1
        _remember(seen, delivery, lives[delivery.ack_id], sub.ack_deadline)


def _cause(index: Index, sub: str, delivery: Deliver, seen: _EarlierDeliveries, skew_tolerance: float) -> str:
    now = delivery.t
    reasons = (
        ("publish-retry", delivery.message_id != seen.first_message_id),
        ("seek", bool(index.seeks_sent_between(sub, seen.previous_t, now))),
        ("nack", seen.nacked < now),
        ("ack-lost", seen.ack_lost < now),
        ("expired", seen.expired <= now + skew_tolerance),
        ("after-ack", seen.acked < now),
    )
    return next((name for name, holds in reasons if holds), "copy")


def _remember(seen: _EarlierDeliveries, delivery: Deliver, life: AckIdLife, ack_deadline: float) -> None:
    seen.previous_t = delivery.t
    seen.nacked = min([seen.nacked, *(m.t_sent for m in life.nacks)])
    seen.ack_lost = min([seen.ack_lost, *(a.t_sent for a in (*life.refusals, *life.doubts) if isinstance(a, Ack))])
    seen.acked = min([seen.acked, *(a.t_sent for a in life.confirms)])
    lease_end = life.current_lease_end(ack_deadline)
    if life.first_ack_sent >= lease_end:
        seen.expired = min(seen.expired, lease_end)
