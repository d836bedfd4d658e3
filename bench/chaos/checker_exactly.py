"""The history checker's exactly-once rules (words as in checker_index.py), judged on subscriptions with
exactly-once delivery:

- ``redelivered-after-ack``: a message id delivered again after an Ack had confirmed one of its ack ids on the
  subscription (the Ack answered before the delivery did), with no seek (ok or unknown) sent on the
  subscription in between, which may have replayed it;
- ``seek-replayed-outside`` (subscriptions with seeks): such a redelivery after seeks were sent in between, but
  every one of them was a seek to a time later than the message's publish time: a seek to a time only replays
  what was published at or after it (a seek to a snapshot, or a message without a known publish time, is not
  judged);
- ``stale-ack-accepted``: an Ack confirmed an ack id that was already stale when the Ack was sent: the message
  had since been delivered again under another ack id, or the ack id had been nacked (ok), or its lease had
  surely ended (sent more than the skew tolerance after the latest end the delivery and its extensions asked
  for).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from bench.chaos.checker_index import Index, Violation, rfc3339_nanos
from bench.chaos.history import OK, Ack, Deliver, Op, Seek, Subscription

REDELIVERED_AFTER_ACK, SEEK_REPLAYED_OUTSIDE = "redelivered-after-ack", "seek-replayed-outside"
STALE_ACK_ACCEPTED = "stale-ack-accepted"
EXACTLY_ONCE_RULES = (REDELIVERED_AFTER_ACK, STALE_ACK_ACCEPTED, SEEK_REPLAYED_OUTSIDE)


def redelivery_rules(index: Index, sub: Subscription) -> Iterator[Violation]:
    lives = index.ack_ids.get(sub.name, {})
    for message_id, deliveries in index.by_message.get(sub.name, {}).items():
        confirms = sorted(((ack, d) for d in deliveries for ack in lives[d.ack_id].confirms), key=lambda c: c[0].t)
        if not confirms:
            continue
        answered = [ack.t for ack, _ in confirms]
        for delivery in deliveries:
            position = bisect_left(answered, delivery.t)
            if position == 0:
                continue
            ack, acked = confirms[position - 1]
            yield from _judge_redelivery(index, sub, message_id, (acked, ack, delivery))


def _judge_redelivery(
    index: Index, sub: Subscription, message_id: str, shown: tuple[Deliver, Ack, Deliver]
) -> Iterator[Violation]:
    _, ack, delivery = shown
    seeks = index.seeks_sent_between(sub.name, ack.t, delivery.t)
    if not seeks:
        detail = f"{message_id} was delivered at {delivery.t} after an ack confirmed at {ack.t}"
        yield Violation(REDELIVERED_AFTER_ACK, sub.name, message_id, detail, shown)
        return
    published = index.publish_times.get(message_id)
    if not sub.seeks or published is None or not all(_seek_excludes(seek, published) for seek in seeks):
        return
    detail = f"{message_id} was replayed after seek(s) to times after its publish time, though acked before them"
    yield Violation(SEEK_REPLAYED_OUTSIDE, sub.name, message_id, detail, (*shown, *seeks[:2]))


def _seek_excludes(seek: Seek, published: int) -> bool:
    """Whether a seek to a time left this message (published before that time) acknowledged."""
    target = rfc3339_nanos(seek.time) if seek.time else None
    return target is not None and published < target


def stale_ack_rule(index: Index, sub: Subscription, skew_tolerance: float) -> Iterator[Violation]:
    for ack_id, life in index.ack_ids.get(sub.name, {}).items():
        if life.delivery is None:
            continue
        for ack in life.confirms:
            reason = _staleness(index, sub, ack_id, ack, skew_tolerance)
            if reason:
                evidence = (life.delivery, ack, *reason[1])
                yield Violation(STALE_ACK_ACCEPTED, sub.name, ack_id, f"{ack_id} was acked {reason[0]}", evidence)
                break


def _staleness(
    index: Index, sub: Subscription, ack_id: str, ack: Ack, skew_tolerance: float
) -> tuple[str, tuple[Op, ...]] | None:
    life = index.ack_ids[sub.name][ack_id]
    delivery = life.delivery
    assert delivery is not None
    later = _next_delivery_elsewhere(index, sub.name, delivery)
    if later is not None and later.t < ack.t_sent:
        return f"after {delivery.message_id} was delivered again as {later.ack_id}", (later,)
    nacked = [m for m in life.nacks if m.seconds == 0 and m.outcome == OK and m.t < ack.t_sent]
    if nacked:
        return "after it was nacked", (nacked[0],)
    lease_end = life.lease_end(sub.ack_deadline)
    if ack.t_sent > lease_end + skew_tolerance:
        return f"at {ack.t_sent}, after its lease ended at {lease_end}", tuple(life.extensions[-1:])
    return None


def _next_delivery_elsewhere(index: Index, sub: str, delivery: Deliver) -> Deliver | None:
    """The first delivery of the same message id on ``sub`` after ``delivery``, under another ack id."""
    deliveries = index.by_message[sub][delivery.message_id]
    times = [d.t for d in deliveries] if len(deliveries) > 1 else []
    for later in deliveries[bisect_right(times, delivery.t) :]:
        if later.ack_id != delivery.ack_id:
            return later
    return None
