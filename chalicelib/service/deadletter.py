"""Dead-lettering: messages past maxDeliveryAttempts go to their subscription's dead-letter topic (the rules are
core/queueing/deadletter.py).

Forwarding (:class:`DeadLetters`). A message received for its (maxDeliveryAttempts + 1)-th attempt is not
delivered: it is published to the dead-letter topic with the attributes Google adds, and the caller removes it
from the source queue. If the dead-letter topic is gone, the message stays in the source queue (hidden for
METRO_DEAD_LETTER_RETRY_SECONDS, then tried again) and each such attempt is counted: a
``DeadLetterTopicMissing`` CloudWatch metric (embedded metric format) and an error log line; it is never dropped
silently. Each forward adds one to the message's ``CloudPubSubDeadLetterHops`` attribute. A message that has
already been forwarded METRO_DEAD_LETTER_MAX_HOPS times (dead-letter topics whose subscriptions dead-letter to
each other) is dropped instead, with a ``DeadLetterHopLimit`` metric and an error log line.

Last attempts (:class:`LastAttempts`) are forwarded when they end, not on the next receive:

pull     : deliveries at maxDeliveryAttempts stay hidden for their deadline plus a grace period, and
           each gets a record (one BatchWriteItem per pull response; none for subscriptions without a
           dead-letter policy, none for earlier attempts).
nack     : a last attempt is forwarded at once: one BatchGetItem of its record, the publish to the
           dead-letter topic, one DeleteMessageBatch, one BatchWriteItem of deletes.
modack   : a last attempt's record follows its new deadline (one UpdateItem per message).
ack      : nothing (the sweep finds the message deleted and drops the record).
sweep    : records whose deadline passed; each message is claimed with one ChangeMessageVisibilityBatch
           per queue (SQS refuses it for a message that was acknowledged), forwarded, deleted. Run by the
           maintenance schedule (delivery/maintenance.py).

A crash between two of these steps leaves the record: the sweep forwards the message later (perhaps
a second time: delivery to the dead-letter topic is at least once). A message the sweep could not
reach within the grace period is forwarded by the next receive of its subscription, as before.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from chalicelib.core import names
from chalicelib.core.errors import NotFound
from chalicelib.core.queueing.ackids import AckId
from chalicelib.core.queueing.deadletter import LastAttempt, is_last_attempt, last_attempt_visibility, past_max_attempts
from chalicelib.core.queueing.envelope import Envelope, encode
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.messages import NewMessage
from chalicelib.service.context import Context
from chalicelib.service.delivery import Delivery, Steps, decode

log = logging.getLogger("metro.deadletter")
METRIC_NAMESPACE = "Metro"
HOPS_ATTRIBUTE = "CloudPubSubDeadLetterHops"
CLAIM_SECONDS = 60  # how long a claimed message stays hidden while the sweep forwards it
SWEEP_LIMIT = 1000  # records one sweep handles (the rest wait for the next run)

# (topic, messages) -> message ids: how a dead-lettered message is published (PublishService.append)
Republish = Callable[[names.Name, list[NewMessage]], list[str]]


class Forwarded(enum.Enum):
    SENT = "sent"  # published to the dead-letter topic: remove it from the source
    PARKED = "parked"  # the dead-letter topic is missing: keep it, try again later
    DROPPED = "dropped"  # past the hop limit: remove it from the source, never forward it again

    @property
    def removes(self) -> bool:
        return self is not Forwarded.PARKED


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


@dataclass
class DeadLettered:
    """The outcome of forwarding: ``removed`` leave the source queue, ``parked`` wait there."""

    removed: list[Delivery] = field(default_factory=list)
    parked: list[Delivery] = field(default_factory=list)


class DeadLetters:
    """Forwards messages past maxDeliveryAttempts to their subscription's dead-letter topic."""

    def __init__(self, ctx: Context, republish: Republish) -> None:
        self.ctx = ctx
        self.republish = republish

    @staticmethod
    def due(rec: SubscriptionRecord, deliveries: Sequence[Delivery]) -> list[Delivery]:
        """The deliveries past maxDeliveryAttempts: they go to the dead-letter topic instead of the subscriber."""
        return [d for d in deliveries if d.env is not None and past_max_attempts(rec, d.attempt)]

    def forward(self, rec: SubscriptionRecord, due: Sequence[Delivery], ended: bool = False) -> DeadLettered:
        """Forward messages past maxDeliveryAttempts (their bodies fetched) to the dead-letter topic: due for
        one attempt more, or (``ended``) at the end of their last attempt."""
        out = DeadLettered()
        for d in due:
            assert d.env is not None and d.data is not None
            forwarded = self._forward_one(rec, d.env, d.data, d.attempt if ended else d.attempt - 1)
            (out.removed if forwarded.removes else out.parked).append(d)
        return out

    def _forward_one(self, rec: SubscriptionRecord, env: Envelope, data: bytes, attempts: int) -> Forwarded:
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


class LastAttempts:
    """Dead-lettering without a pull: the records of last attempts, the nack that ends one, the sweep."""

    def __init__(self, ctx: Context, steps: Steps, dead_letters: DeadLetters) -> None:
        self.ctx = ctx
        self.steps = steps
        self.dead_letters = dead_letters

    def _visibility(self, rec: SubscriptionRecord, deadline: int, attempt: int) -> int:
        return last_attempt_visibility(rec, deadline, attempt, self.ctx.config.dead_letter_grace_seconds)

    # -- pull ---------------------------------------------------------------------------------------
    def remember(self, rec: SubscriptionRecord, deliveries: Sequence[Delivery]) -> list[tuple[str, int]]:
        """Record the last attempts among ``deliveries``; return their visibility changes (receipt, seconds)."""
        last = [d for d in deliveries if d.env is not None and is_last_attempt(rec, d.attempt)]
        if not last:
            return []
        due = self.ctx.clock() + rec.spec.ack_deadline
        self.ctx.last_attempts.put([self._entry(rec, d, due) for d in last], self._expires(rec))
        return [(d.receipt, self._visibility(rec, rec.spec.ack_deadline, d.attempt)) for d in last]

    def _entry(self, rec: SubscriptionRecord, d: Delivery, due: float) -> LastAttempt:
        assert d.env is not None
        return LastAttempt(rec.name, rec.queue_gen, d.message_id, rec.queue_url, d.receipt, encode(d.env),
                           d.attempt, due)

    def _expires(self, rec: SubscriptionRecord) -> int:
        return int(self.ctx.clock() + rec.spec.retention_seconds)

    # -- acknowledge-side calls ---------------------------------------------------------------------
    def nacked(self, rec: SubscriptionRecord, acks: Sequence[AckId]) -> list[AckId]:
        """Forward the nacked last attempts now; return the acks left to nack as usual (earlier attempts,
        and last attempts whose record is missing: their next receive forwards them)."""
        last = [a for a in acks if is_last_attempt(rec, a.attempt)]
        if not last:
            return list(acks)
        found = {e.message_id: e for e in self.ctx.last_attempts.get(rec.name, rec.queue_gen,
                                                                     [a.message_id for a in last])}
        forwarded = {a.receipt for a in last if a.message_id in found}
        # The client's receipt is the newest one: it is the one that removes the message.
        self._forward(rec, [dataclasses.replace(found[a.message_id], receipt=a.receipt) for a in last
                            if a.message_id in found])
        return [a for a in acks if a.receipt not in forwarded]

    def extended(self, rec: SubscriptionRecord, acks: Sequence[AckId], seconds: int) -> dict[str, int]:
        """A new deadline for last attempts: move their records; their visibility changes by receipt."""
        out: dict[str, int] = {}
        for a in acks:
            if is_last_attempt(rec, a.attempt) and self.ctx.last_attempts.postpone(
                    rec.name, rec.queue_gen, a.message_id, self.ctx.clock() + seconds):
                out[a.receipt] = self._visibility(rec, seconds, a.attempt)
        return out

    # -- the sweep ----------------------------------------------------------------------------------
    def sweep(self) -> int:
        """Forward the last attempts whose deadline passed; return how many left their subscription."""
        by_sub: dict[tuple[str, int], list[LastAttempt]] = defaultdict(list)
        for entry in self.ctx.last_attempts.due(self.ctx.clock(), SWEEP_LIMIT):
            by_sub[(entry.subscription, entry.queue_gen)].append(entry)
        done = 0
        for (name, gen), entries in by_sub.items():
            try:
                done += self._sweep_one(name, gen, entries)
            except Exception:  # one subscription's failure must not stop the others; its records stay
                log.exception("dead-letter sweep of %s failed", name)
        return done

    def _sweep_one(self, name: str, gen: int, entries: list[LastAttempt]) -> int:
        rec = self.ctx.resources.get_subscription(names.parse(name, "subscriptions"))
        if rec is None or rec.queue_gen != gen or not rec.spec.dead_letter_policy:
            self.ctx.last_attempts.delete(entries)  # deleted, recreated, or no longer dead-lettering
            return 0
        failed = set(self.ctx.queues.change_visibility_batch(rec.queue_url,
                                                             [(e.receipt, CLAIM_SECONDS) for e in entries]))
        gone = [e for i, e in enumerate(entries) if i in failed]  # acknowledged, or no longer held
        if gone:
            self.ctx.last_attempts.delete(gone)
        claimed = [e for i, e in enumerate(entries) if i not in failed]
        return self._forward(rec, claimed)

    # -- forwarding ---------------------------------------------------------------------------------
    def _forward(self, rec: SubscriptionRecord, entries: Sequence[LastAttempt]) -> int:
        """Publish held last attempts to the dead-letter topic and remove them from the subscription; a
        missing topic parks them (hidden for METRO_DEAD_LETTER_RETRY_SECONDS, their records kept)."""
        if not entries:
            return 0
        deliveries = [decode(e.body, e.receipt, e.attempt) for e in entries]
        self.steps.fetch_bodies(deliveries)
        ready = [d for d in deliveries if d.env is not None and d.data is not None]
        out = self.dead_letters.forward(rec, ready, ended=True)
        removed = {d.receipt for d in out.removed}
        if removed:
            self.ctx.queues.delete_batch(rec.queue_url, list(removed))
        if out.parked:
            wait = parked_seconds(self.ctx)
            self.ctx.queues.change_visibility_batch(rec.queue_url, [(d.receipt, self._visibility(rec, wait, d.attempt))
                                                                   for d in out.parked])
            parked, later = {d.receipt for d in out.parked}, self.ctx.clock() + wait
            self.ctx.last_attempts.put([dataclasses.replace(e, due=later) for e in entries if e.receipt in parked],
                                       self._expires(rec))
        unsettled = {d.receipt for d in deliveries} - {d.receipt for d in ready}
        for e in entries:
            if e.receipt in unsettled:
                log.error("last attempt of message %s of %s has no body; it is left to its next receive",
                          e.message_id, rec.name)
        self.ctx.last_attempts.delete([e for e in entries if e.receipt in removed or e.receipt in unsettled])
        return len(removed)

