"""Retry and delivery-attempt policy of a subscription: pure functions of its record.

deliveryAttempt is 1 + nacks + deadline expiries. A message due for attempt maxDeliveryAttempts + 1
goes to the dead-letter topic instead of being delivered. After a nack, the message waits the retry
policy's backoff; after a deadline expiry it waits the same backoff, because a delivery's visibility
is its ack deadline *plus* the backoff its next attempt would get (:func:`expiry_visibility`).
"""

from __future__ import annotations

from chalicelib.core import limits
from chalicelib.core.backoff import retry_delay
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_duration

DEFAULT_MINIMUM_BACKOFF = 10.0
DEFAULT_MAXIMUM_BACKOFF = 600.0


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


def nack_delay(rec: SubscriptionRecord, attempt: int) -> int:
    """Seconds before a message nacked (or expired) at ``attempt`` is redelivered: 0 without a retry policy."""
    policy = rec.spec.retry_policy
    if policy is None:
        return 0
    low = parse_duration(policy.minimum_backoff, "minimum_backoff") if policy.minimum_backoff \
        else DEFAULT_MINIMUM_BACKOFF
    high = parse_duration(policy.maximum_backoff, "maximum_backoff") if policy.maximum_backoff \
        else DEFAULT_MAXIMUM_BACKOFF
    return round(retry_delay(max(attempt, 1), low, max(low, high)))


def expiry_visibility(rec: SubscriptionRecord, deadline: int, attempt: int) -> int:
    """SQS visibility of a delivery: its ack deadline plus the backoff that follows if it expires."""
    return deadline + nack_delay(rec, attempt)


def redelivery_visibility(rec: SubscriptionRecord, attempt: int) -> int | None:
    """A redelivery's own visibility when its backoff differs from the first attempt's (which the receive
    used for the whole batch); None when the receive's visibility already fits."""
    if attempt <= 1 or nack_delay(rec, attempt) == nack_delay(rec, 1):
        return None
    return expiry_visibility(rec, rec.spec.ack_deadline, attempt)


def tracks_attempts(rec: SubscriptionRecord) -> bool:
    """Whether the delivery attempt matters: reported (dead-letter policy) or used (retry policy)."""
    return max_attempts(rec) > 0 or rec.spec.retry_policy is not None


def reports_attempts(rec: SubscriptionRecord) -> bool:
    """Whether deliveries show deliveryAttempt (as with Google: only with a dead-letter policy)."""
    return max_attempts(rec) > 0
