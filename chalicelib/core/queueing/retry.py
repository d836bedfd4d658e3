"""Retry policy of a subscription: how long a nacked or expired delivery waits, pure functions of its record.

deliveryAttempt is 1 + nacks + deadline expiries. After a nack, the message waits the retry policy's backoff;
after a deadline expiry it waits the same backoff, because a delivery's visibility is its ack deadline *plus*
the backoff its next attempt would get (:func:`expiry_visibility`). When the attempts run out, the message goes
to the dead-letter topic (core/queueing/deadletter.py).
"""

from __future__ import annotations

from chalicelib.core.queueing.backoff import retry_delay
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_duration

DEFAULT_MINIMUM_BACKOFF = 10.0
DEFAULT_MAXIMUM_BACKOFF = 600.0


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
