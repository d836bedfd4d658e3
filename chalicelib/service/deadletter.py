"""Delivery attempts, dead-lettering and redelivery delays, shared by pull and push delivery.

deliveryAttempt is 1 + nacks + deadline expiries: SQS's ApproximateReceiveCount minus the receives
that were not deliveries (see :class:`~chalicelib.store.leases.SkipStore`). When a message is
received for its (maxDeliveryAttempts + 1)-th attempt, it is not delivered: it is published to the
dead-letter topic with the attributes Google adds, then removed from the source queue. If the
dead-letter topic is gone, the message stays in the source queue (hidden for
METRO_DEAD_LETTER_RETRY_SECONDS, then tried again) and each such attempt is counted: a
``DeadLetterTopicMissing`` CloudWatch metric (embedded metric format) and an error log line; it is
never dropped silently.

Retry policy: after a nack, the message's visibility is the backoff; after a deadline expiry it is
the same backoff, because a delivery's visibility is its ack deadline *plus* the backoff its next
attempt would get (:func:`expiry_visibility`). Acks and exactly-once leases still end at the ack
deadline itself.
"""

from __future__ import annotations

import logging

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from chalicelib.core import limits, names
from chalicelib.core.backoff import retry_delay
from chalicelib.core.errors import NotFound
from chalicelib.core.messages import NewMessage
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_duration
from chalicelib.service.context import Context
from chalicelib.service.publish import PublishService

log = logging.getLogger("metro.deadletter")
METRIC_NAMESPACE = "Metro"


def max_attempts(rec: SubscriptionRecord) -> int:
    """0 when the subscription has no dead-letter policy."""
    policy = rec.spec.dead_letter_policy
    if not policy or not policy.dead_letter_topic:
        return 0
    return policy.max_delivery_attempts or limits.DEAD_LETTER_DEFAULT_ATTEMPTS


def nack_delay(rec: SubscriptionRecord, attempt: int) -> int:
    """Seconds before a message nacked (or expired) at ``attempt`` is redelivered: 0 without a retry policy."""
    policy = rec.spec.retry_policy
    if policy is None:
        return 0
    low = parse_duration(policy.minimum_backoff, "minimum_backoff") if policy.minimum_backoff else 10.0
    high = parse_duration(policy.maximum_backoff, "maximum_backoff") if policy.maximum_backoff else 600.0
    return int(round(retry_delay(max(attempt, 1), low, max(low, high))))


def expiry_visibility(rec: SubscriptionRecord, deadline: int, attempt: int) -> int:
    """SQS visibility of a delivery: its ack deadline plus the backoff that follows if it expires."""
    return deadline + nack_delay(rec, attempt)


def tracks_attempts(rec: SubscriptionRecord) -> bool:
    """Whether the delivery attempt matters: reported (dead-letter policy) or used (retry policy)."""
    return max_attempts(rec) > 0 or rec.spec.retry_policy is not None


class Attempts:
    """Turns receive counts into delivery attempts, and remembers receives that were not deliveries."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.store = ctx.skips

    def skips(self, rec: SubscriptionRecord, counts: list[tuple[str, int]]) -> dict[str, int]:
        """Skipped receives per message id, for (message id, receive count) pairs; one read per batch."""
        wanted = [mid for mid, count in counts if count > 1]
        if not wanted or not tracks_attempts(rec):
            return {}
        return self.store.get(rec.name, rec.queue_gen, wanted)

    def skipped(self, rec: SubscriptionRecord, previous: dict[str, int]) -> None:
        """These messages (id -> skips so far) were received and handed back undelivered: count one more."""
        if not previous or not tracks_attempts(rec):
            return
        expires = int(self.ctx.clock() + rec.spec.retention_seconds)
        self.store.put(rec.name, rec.queue_gen, {mid: n + 1 for mid, n in previous.items()}, expires)


def parked_seconds(ctx: Context) -> int:
    """How long a message waits when its dead-letter topic is missing."""
    return max(1, ctx.config.dead_letter_retry_seconds)


def forward(ctx: Context, rec: SubscriptionRecord, data: bytes, attributes: dict[str, str], ordering_key: str,
            attempts: int, publish_time: str) -> bool:
    """Publish one message to the subscription's dead-letter topic; False when that topic is gone."""
    policy = rec.spec.dead_letter_policy
    assert policy is not None
    sub = names.parse(rec.name, "subscriptions")
    extra = {
        "CloudPubSubDeadLetterSourceDeliveryCount": str(attempts),
        "CloudPubSubDeadLetterSourceSubscription": sub.id,
        "CloudPubSubDeadLetterSourceSubscriptionProject": sub.project,
        "CloudPubSubDeadLetterSourceTopicPublishTime": publish_time,
    }
    try:
        PublishService(ctx).append(names.parse(policy.dead_letter_topic, "topics"),
                                   [NewMessage(data, {**attributes, **extra}, ordering_key)])
    except NotFound:
        log.error("dead-letter topic %s of %s is missing; the message stays in the subscription and is tried "
                  "again in %ss", policy.dead_letter_topic, rec.name, parked_seconds(ctx))
        with single_metric(name="DeadLetterTopicMissing", unit=MetricUnit.Count, value=1,
                           namespace=METRIC_NAMESPACE) as metric:
            metric.add_dimension(name="Subscription", value=rec.name)
        return False
    return True
