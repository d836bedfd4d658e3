"""Dead-lettering without a pull: the pure half of service/last_attempts.py.

A delivery of a subscription with a dead-letter policy whose attempt is maxDeliveryAttempts is its last:
if it is nacked, or its ack deadline passes, the message goes to the dead-letter topic. Metro keeps a
small record of every last-attempt delivery (:class:`LastAttempt`): the nack forwards it at once, and
the dead-letter sweep forwards the ones whose deadline passed. So that the sweep can still claim the
message by its receipt handle (SQS refuses a visibility change on a message that is visible again),
a last attempt stays hidden for a grace period after its deadline (:func:`last_attempt_visibility`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.core.policy import max_attempts, nack_delay
from chalicelib.core.records import SubscriptionRecord

MAX_VISIBILITY = 43_200  # SQS's limit on a visibility timeout (12 hours)


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


def is_last_attempt(rec: SubscriptionRecord, attempt: int) -> bool:
    """Whether a delivery at ``attempt`` is the last one before the dead-letter topic."""
    limit = max_attempts(rec)
    return bool(limit) and attempt >= limit


def last_attempt_visibility(rec: SubscriptionRecord, deadline: int, attempt: int, grace: int) -> int:
    """SQS visibility of a last attempt: its deadline, then at least ``grace`` seconds for the sweep."""
    return min(MAX_VISIBILITY, deadline + max(nack_delay(rec, attempt), grace))


def shard_of(subscription: str, shards: int) -> int:
    """The partition of the subscription's last-attempt records (a stable hash of its name)."""
    return zlib.crc32(subscription.encode()) % shards


def hourly_work_due(event: Mapping[str, Any] | None) -> bool:
    """Whether a maintenance run does its hourly work: in the first minute of an hour by the scheduled
    event's ``time`` (EventBridge runs the function every minute); always when the event has no time."""
    when = str((event or {}).get("time") or "")
    if len(when) < 16 or when[13] != ":":
        return True
    return when[14:16] == "00"
