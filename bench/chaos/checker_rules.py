"""The history checker's rules on what each subscription delivered (words as in checker_index.py).

Judged only when the run drained (the history ends with End(drained=True)):

- ``lost``: a key acknowledged on publish that should reach a subscription was never delivered on it. A
  dead-letter subscription should receive every key of its source, so a key its source delivered but never
  forwarded is lost on the dead-letter subscription;
- ``stored-not-delivered``: a key not acknowledged on publish (its publish answer was lost or refused) but
  delivered somewhere, so stored, that should reach a subscription and was never delivered on it (keys
  acknowledged on publish are ``lost`` instead, never both);
- ``unsettled``: a key delivered on a subscription where nothing settled it: none of its ack ids confirmed,
  in doubt or refused.
- neither ``lost`` nor ``unsettled`` counts a key a seek to a time may have acknowledged (``seek_acked``,
  checker_seek.py). On a dead-letter source (where everything is nacked) settled means it reached the
  dead-letter subscription.

Judged always:

- ``order`` (ordered subscriptions): a key delivered for the first time while a key of the same ordering key
  with a higher sequence had already been delivered for the first time. Redeliveries never count;
- ``filter-leak``: a filtered subscription delivered a key whose published attributes (the delivery's own when
  no publish of the key was recorded) do not match its filter;
- ``dead-letter-count`` (dead-letter subscriptions): a forward whose ``CloudPubSubDeadLetterSourceDeliveryCount``
  is below its source's max delivery attempts (forwarded early) or missing; ``dead-letter-late``: a message's
  first forward counting more (best effort, see dead_letter_count_rule);
- ``over-delivered`` (dead-letter sources with N max delivery attempts): a delivery attempt above N, a delivery
  without an attempt (0) although the policy is set, or more than N deliveries per queued copy of a message (the
  copies a retried fan-out send makes count their attempts apart, as SQS counts receives per copy);
- ``delivered-after-dead-letter`` (dead-letter sources): the source delivered a key after its dead-letter
  subscription had delivered the forwards of every queued copy of it (matched by key: forwarding gives a new
  message id; keys stored twice by a retried publish are exempt, their other message may still be live).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from bench.chaos.checker_index import CONFIRMED, IN_DOUBT, REFUSED, Index, Violation, filter_matches, narrowed
from bench.chaos.history import Deliver, Op, Subscription

LOST, STORED_NOT_DELIVERED, UNSETTLED = "lost", "stored-not-delivered", "unsettled"
ORDER, FILTER_LEAK, DEAD_LETTER_COUNT = "order", "filter-leak", "dead-letter-count"
OVER_DELIVERED, DELIVERED_AFTER_DEAD_LETTER = "over-delivered", "delivered-after-dead-letter"
DEAD_LETTER_LATE = "dead-letter-late"
DRAINED_RULES = (LOST, STORED_NOT_DELIVERED, UNSETTLED)
DELIVERY_RULES = (*DRAINED_RULES, ORDER, FILTER_LEAK, DEAD_LETTER_COUNT, DEAD_LETTER_LATE, OVER_DELIVERED,
                  DELIVERED_AFTER_DEAD_LETTER)
DELIVERY_COUNT_ATTRIBUTE = "CloudPubSubDeadLetterSourceDeliveryCount"
SETTLED = (CONFIRMED, IN_DOUBT, REFUSED)


def drained_rules(index: Index, sub: Subscription, expected: set[str],
                  seek_acked: frozenset[str] = frozenset()) -> Iterator[Violation]:
    delivered = index.by_key.get(sub.name, {})
    for key in sorted(expected - delivered.keys() - seek_acked):
        publish = index.publish_answer.get(key)
        if publish is not None:
            detail = f"{key} was acknowledged on publish and should reach {sub.name}, which never delivered it"
            yield Violation(LOST, sub.name, key, detail, (narrowed(publish, key),))
        else:
            stored = index.stored[key]
            detail = f"{key} was stored (delivered on {stored.sub} as {stored.message_id}) but never on {sub.name}"
            first = index.first_publish.get(key)
            shown: tuple[Op, ...] = (stored, *([narrowed(first, key)] if first else []))
            yield Violation(STORED_NOT_DELIVERED, sub.name, key, detail, shown)
    yield from _unsettled(index, sub, seek_acked)


def _unsettled(index: Index, sub: Subscription, seek_acked: frozenset[str]) -> Iterator[Violation]:
    if sub.max_delivery_attempts > 0:
        yield from _not_dead_lettered(index, sub)
        return
    lives = index.ack_ids.get(sub.name, {})
    for key, deliveries in index.by_key.get(sub.name, {}).items():
        if key not in seek_acked and not any(lives[d.ack_id].status in SETTLED for d in deliveries):
            detail = f"{key} was delivered {len(deliveries)} time(s) on {sub.name} and no ack settled it"
            yield Violation(UNSETTLED, sub.name, key, detail, tuple(deliveries[:5]))


def _not_dead_lettered(index: Index, sub: Subscription) -> Iterator[Violation]:
    dead_letter_subs = index.dead_letter_subs.get(sub.name, [])
    if not dead_letter_subs:
        return
    forwarded = set().union(*(index.by_key.get(name, {}).keys() for name in dead_letter_subs))
    for key, deliveries in index.by_key.get(sub.name, {}).items():
        if key not in forwarded:
            detail = f"{key} was delivered on dead-letter source {sub.name} but never reached its dead-letter topic"
            yield Violation(UNSETTLED, sub.name, key, detail, tuple(deliveries[:5]))


def order_rule(index: Index, sub: Subscription) -> Iterator[Violation]:
    first_delivered: set[str] = set()
    highest: dict[str, Deliver] = {}  # ordering key -> first delivery with the highest sequence so far
    for delivery in index.deliveries.get(sub.name, []):
        if delivery.key in first_delivered:
            continue
        first_delivered.add(delivery.key)
        ordering_key, seq = _ordering_of(index, delivery)
        if not ordering_key:
            continue
        ahead = highest.get(ordering_key)
        if ahead is not None and _ordering_of(index, ahead)[1] > seq:
            detail = f"{delivery.key} (seq {seq}) first delivered after {ahead.key} of ordering key {ordering_key}"
            yield Violation(ORDER, sub.name, delivery.key, detail, (ahead, delivery))
        else:
            highest[ordering_key] = delivery


def _ordering_of(index: Index, delivery: Deliver) -> tuple[str, int]:
    message = index.messages.get(delivery.key)
    if message is not None:
        return message.ordering_key, message.seq
    return delivery.ordering_key, delivery.seq


def filter_rule(index: Index, sub: Subscription) -> Iterator[Violation]:
    if not sub.filter:
        return
    for delivery in index.deliveries.get(sub.name, []):
        attributes = index.published_attributes(delivery.key, delivery.attributes)
        if not filter_matches(sub.filter, attributes):
            detail = f"{delivery.key} with attributes {attributes} does not match the filter {sub.filter}"
            publish = index.first_publish.get(delivery.key)
            shown: tuple[Op, ...] = (delivery, *([narrowed(publish, delivery.key)] if publish else []))
            yield Violation(FILTER_LEAK, sub.name, delivery.key, detail, shown)


def dead_letter_count_rule(index: Index, sub: Subscription) -> Iterator[Violation]:
    """No forward may say fewer than N deliveries (forwarded early: a violation). A message's first forward that
    says more (``dead-letter-late``) is reported as best effort: an attempt whose answer was lost counts, as
    Google counts an expired deadline, and Google honours maxDeliveryAttempts "on a best effort basis". A later
    forward may say more too: its removal from the source was lost, and it was forwarded again at the next
    receive ("the same message might be dead lettered multiple times")."""
    source = index.subs.get(sub.dead_letter_of)
    if source is None or source.max_delivery_attempts <= 0:
        return
    limit, first_seen = source.max_delivery_attempts, set()
    for delivery in sorted(index.deliveries.get(sub.name, []), key=lambda d: d.t):
        count = delivery.attributes.get(DELIVERY_COUNT_ATTRIBUTE, "")
        first = delivery.key not in first_seen
        first_seen.add(delivery.key)
        detail = f"{delivery.key} was forwarded after {count or 'no'} deliveries on {source.name}, not {limit}"
        if not count.isdigit() or int(count) < limit:
            yield Violation(DEAD_LETTER_COUNT, sub.name, delivery.key, detail, (delivery,))
        elif first and int(count) > limit:
            yield Violation(DEAD_LETTER_LATE, sub.name, delivery.key, detail, (delivery,))


def over_delivered_rule(index: Index, sub: Subscription) -> Iterator[Violation]:
    """Attempts count per queued copy: a message fanned out twice (a send retried after a lost answer) is two
    copies, each delivered up to N times and each dead-lettered, which Google's "best effort" dead lettering
    allows. What no copy may do is go past N: more deliveries than N per copy seen, or an attempt outside 1..N."""
    limit = sub.max_delivery_attempts
    for message_id, deliveries in index.by_message.get(sub.name, {}).items():
        copies = max(Counter(d.attempt for d in deliveries).values())
        if len(deliveries) > limit * copies:
            detail = (f"{message_id} was delivered {len(deliveries)} times, more than {limit} attempts for each of "
                      f"its {copies} queued copies")
            yield Violation(OVER_DELIVERED, sub.name, message_id, detail, (deliveries[0], deliveries[-1]))
        for delivery in deliveries:
            if delivery.attempt > limit or delivery.attempt == 0:
                detail = f"{message_id} was delivered with attempt {delivery.attempt} (the policy allows 1..{limit})"
                yield Violation(OVER_DELIVERED, sub.name, message_id, detail, (delivery,))


def after_dead_letter_rule(index: Index, sub: Subscription) -> Iterator[Violation]:
    """A source delivery after every queued copy of its message was forwarded (each forward is a new message id
    on the dead-letter topic; copies as over_delivered_rule counts them)."""
    forwards = _dead_letter_deliveries(index, sub.name)
    copies = {mid: max(Counter(d.attempt for d in ds).values())
              for mid, ds in index.by_message.get(sub.name, {}).items()}
    for delivery in index.deliveries.get(sub.name, []):
        if len(index.key_ids.get(delivery.key, ())) > 1:
            continue  # a retried publish stored it twice: the other message may still be live
        before = [d for d in forwards.get(delivery.key, []) if d.t < delivery.t]
        if len({d.message_id for d in before}) < copies[delivery.message_id]:
            continue
        detail = f"{delivery.message_id} ({delivery.key}) was delivered after {before[0].sub} delivered it"
        yield Violation(DELIVERED_AFTER_DEAD_LETTER, sub.name, delivery.message_id, detail, (before[0], delivery))


def _dead_letter_deliveries(index: Index, source: str) -> dict[str, list[Deliver]]:
    """Per key, every delivery of its forwarded copies on the source's dead-letter subscriptions, in time order."""
    out: dict[str, list[Deliver]] = {}
    for name in index.dead_letter_subs.get(source, []):
        for key, deliveries in index.by_key.get(name, {}).items():
            out.setdefault(key, []).extend(deliveries)
    return {key: sorted(ds, key=lambda d: d.t) for key, ds in out.items()}
