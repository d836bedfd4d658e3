"""Dead-lettering, the pure part (service/deadletter.py does the I/O): when a message goes to its
subscription's dead-letter topic, and the records of last attempts.

deliveryAttempt is 1 + nacks + deadline expiries. A message due for attempt maxDeliveryAttempts + 1 goes to the
dead-letter topic instead of being delivered (:func:`past_max_attempts`).

A delivery whose attempt is maxDeliveryAttempts is the last (:func:`is_last_attempt`): if it is nacked, or its
ack deadline passes, the message goes to the dead-letter topic without waiting for another pull. Metro keeps a
small record of every last-attempt delivery (:class:`LastAttempt`): the nack forwards it at once, and the
dead-letter sweep forwards the ones whose deadline passed. So that the sweep can still claim the message by its
receipt handle (SQS refuses a visibility change on a message that is visible again), a last attempt stays hidden
for a grace period after its deadline (:func:`last_attempt_visibility`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from chalicelib.core import limits
from chalicelib.core.queueing.retry import nack_delay
from chalicelib.core.records import SubscriptionRecord

MAX_VISIBILITY = 43_200  # SQS's limit on a visibility timeout (12 hours)


def max_attempts(rec: SubscriptionRecord) -> int:
    """maxDeliveryAttempts, or 0 when the subscription has no dead-letter policy."""
    policy = rec.spec.dead_letter_policy
    if not policy or not policy.dead_letter_topic:
        return 0
    return policy.max_delivery_attempts or limits.DEAD_LETTER_DEFAULT_ATTEMPTS


def past_max_attempts(rec: SubscriptionRecord, attempt: int) -> bool:
    """Whether a message due for ``attempt`` goes to the dead-letter topic instead of being delivered."""
    limit = max_attempts(rec)
    return bool(limit) and attempt > limit


def is_last_attempt(rec: SubscriptionRecord, attempt: int) -> bool:
    """Whether a delivery at ``attempt`` is the last one before the dead-letter topic."""
    limit = max_attempts(rec)
    return bool(limit) and attempt >= limit


def tracks_attempts(rec: SubscriptionRecord) -> bool:
    """Whether the delivery attempt matters: reported (dead-letter policy) or used (retry policy)."""
    return max_attempts(rec) > 0 or rec.spec.retry_policy is not None


def reports_attempts(rec: SubscriptionRecord) -> bool:
    """Whether deliveries show deliveryAttempt (as with Google: only with a dead-letter policy)."""
    return max_attempts(rec) > 0


@dataclass(frozen=True)
class LastAttempt:
    """A delivery at maxDeliveryAttempts that has not been settled yet."""

    subscription: str
    queue_gen: int
    message_id: str
    queue_url: str
    receipt: str
    body: str  # the queue message's body (the envelope), to forward it without receiving it again
    attempt: int
    due: float  # when its ack deadline passes (epoch seconds)


def last_attempt_visibility(rec: SubscriptionRecord, deadline: int, attempt: int, grace: int) -> int:
    """SQS visibility of a last attempt: its deadline, then at least ``grace`` seconds for the sweep."""
    return min(MAX_VISIBILITY, deadline + max(nack_delay(rec, attempt), grace))


def shard_of(subscription: str, shards: int) -> int:
    """The partition of the subscription's last-attempt records (a stable hash of its name)."""
    return zlib.crc32(subscription.encode()) % shards
