"""Dead-letter forwarding and delivery-attempt bookkeeping: the I/O half of core/policy.py.

deliveryAttempt is SQS's ApproximateReceiveCount minus the receives that were not deliveries
(:class:`Attempts`, over the SkipStore). A message received for its (maxDeliveryAttempts + 1)-th
attempt is not delivered: :class:`DeadLetters` publishes it to the dead-letter topic with the
attributes Google adds, and the caller removes it from the source queue.

If the dead-letter topic is gone, the message stays in the source queue (hidden for
METRO_DEAD_LETTER_RETRY_SECONDS, then tried again) and each such attempt is counted: a
``DeadLetterTopicMissing`` CloudWatch metric (embedded metric format) and an error log line; it is
never dropped silently.

Each forward adds one to the message's ``CloudPubSubDeadLetterHops`` attribute. A message that has
already been forwarded METRO_DEAD_LETTER_MAX_HOPS times (dead-letter topics whose subscriptions
dead-letter to each other) is dropped instead, with a ``DeadLetterHopLimit`` metric and an error log line.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from chalicelib.core import names
from chalicelib.core.envelope import Envelope
from chalicelib.core.errors import NotFound
from chalicelib.core.messages import NewMessage
from chalicelib.core.policy import tracks_attempts
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context

log = logging.getLogger("metro.deadletter")
METRIC_NAMESPACE = "Metro"
HOPS_ATTRIBUTE = "CloudPubSubDeadLetterHops"

# (topic, messages) -> message ids: how a dead-lettered message is published (PublishService.append)
Republish = Callable[[names.Name, list[NewMessage]], list[str]]


class Forwarded(enum.Enum):
    SENT = "sent"  # published to the dead-letter topic: remove it from the source
    PARKED = "parked"  # the dead-letter topic is missing: keep it, try again later
    DROPPED = "dropped"  # past the hop limit: remove it from the source, never forward it again

    @property
    def removes(self) -> bool:
        return self is not Forwarded.PARKED


class Attempts:
    """Turns receive counts into delivery attempts, and remembers receives that were not deliveries."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def skips(self, rec: SubscriptionRecord, counts: Sequence[tuple[str, int]]) -> dict[str, int]:
        """Skipped receives per message id, for (message id, receive count) pairs; one read per batch."""
        wanted = [mid for mid, count in counts if count > 1]
        if not wanted or not tracks_attempts(rec):
            return {}
        return self.ctx.skips.get(rec.name, rec.queue_gen, wanted)

    def skipped(self, rec: SubscriptionRecord, previous: dict[str, int]) -> None:
        """These messages (id -> skips so far) were received and handed back undelivered: count one more."""
        if not previous or not tracks_attempts(rec):
            return
        expires = int(self.ctx.clock() + rec.spec.retention_seconds)
        self.ctx.skips.put(rec.name, rec.queue_gen, {mid: n + 1 for mid, n in previous.items()}, expires)


def parked_seconds(ctx: Context) -> int:
    """How long a message waits when its dead-letter topic is missing."""
    return max(1, ctx.config.dead_letter_retry_seconds)


def hops(attributes: dict[str, str]) -> int:
    """How many times this message has been dead-lettered already (0 for a published one)."""
    try:
        return max(0, int(attributes.get(HOPS_ATTRIBUTE, "0")))
    except ValueError:
        return 0


def _count(metric_name: str, subscription: str) -> None:
    with single_metric(name=metric_name, unit=MetricUnit.Count, value=1, namespace=METRIC_NAMESPACE) as metric:
        metric.add_dimension(name="Subscription", value=subscription)


class DeadLetters:
    """Forwards messages past maxDeliveryAttempts to their subscription's dead-letter topic."""

    def __init__(self, ctx: Context, republish: Republish) -> None:
        self.ctx = ctx
        self.republish = republish

    def forward(self, rec: SubscriptionRecord, env: Envelope, data: bytes, attempts: int) -> Forwarded:
        """Publish one message (delivered ``attempts`` times) to the dead-letter topic."""
        policy = rec.spec.dead_letter_policy
        assert policy is not None
        done = hops(env.attributes)
        if done >= self.ctx.config.dead_letter_max_hops:
            log.error("message %s of %s has been dead-lettered %d times (METRO_DEAD_LETTER_MAX_HOPS): dropped, "
                      "not forwarded to %s", env.message_id, rec.name, done, policy.dead_letter_topic)
            _count("DeadLetterHopLimit", rec.name)
            return Forwarded.DROPPED
        sub = names.parse(rec.name, "subscriptions")
        extra = {
            "CloudPubSubDeadLetterSourceDeliveryCount": str(attempts),
            "CloudPubSubDeadLetterSourceSubscription": sub.id,
            "CloudPubSubDeadLetterSourceSubscriptionProject": sub.project,
            "CloudPubSubDeadLetterSourceTopicPublishTime": env.publish_time,
            HOPS_ATTRIBUTE: str(done + 1),
        }
        try:
            self.republish(names.parse(policy.dead_letter_topic, "topics"),
                           [NewMessage(data, {**env.attributes, **extra}, env.ordering_key)])
        except NotFound:
            log.error("dead-letter topic %s of %s is missing; the message stays in the subscription and is tried "
                      "again in %ss", policy.dead_letter_topic, rec.name, parked_seconds(self.ctx))
            _count("DeadLetterTopicMissing", rec.name)
            return Forwarded.PARKED
        return Forwarded.SENT
