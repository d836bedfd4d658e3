"""Dead-lettering and redelivery delays, shared by pull and push delivery.

SQS's ApproximateReceiveCount is the delivery attempt (1 + nacks + deadline expiries). When a
message is received for the (maxDeliveryAttempts + 1)-th time, it is not delivered: it is
published to the dead-letter topic with the attributes Google adds, then removed from the
source queue. If the dead-letter topic is gone, the message stays in the source queue (hidden
for a while, so it does not spin) and is counted in the logs, never dropped silently.
"""

from __future__ import annotations

import logging

from chalicelib.core import limits, names
from chalicelib.core.backoff import retry_delay
from chalicelib.core.errors import NotFound
from chalicelib.core.messages import NewMessage
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_duration
from chalicelib.service.context import Context
from chalicelib.service.publish import PublishService

log = logging.getLogger("metro.deadletter")
PARKED_SECONDS = 300  # how long a message waits when its dead-letter topic is missing


def max_attempts(rec: SubscriptionRecord) -> int:
    """0 when the subscription has no dead-letter policy."""
    policy = rec.spec.dead_letter_policy
    if not policy or not policy.dead_letter_topic:
        return 0
    return policy.max_delivery_attempts or limits.DEAD_LETTER_DEFAULT_ATTEMPTS


def nack_delay(rec: SubscriptionRecord, attempt: int) -> int:
    """Seconds before a nacked message is redelivered: 0 without a retry policy (Google's default)."""
    policy = rec.spec.retry_policy
    if policy is None:
        return 0
    low = parse_duration(policy.minimum_backoff, "minimum_backoff") if policy.minimum_backoff else 10.0
    high = parse_duration(policy.maximum_backoff, "maximum_backoff") if policy.maximum_backoff else 600.0
    return int(round(retry_delay(max(attempt, 1), low, max(low, high))))


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
        log.error("dead-letter topic %s of %s is missing; message kept in the subscription (metric: "
                  "dead_letter_topic_missing=1)", policy.dead_letter_topic, rec.name)
        return False
    return True
