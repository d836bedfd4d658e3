"""Pull, acknowledge and modifyAckDeadline over the subscription's SQS queue.

pull    : ReceiveMessage (long poll for the first batch, then short polls while batches come back full),
          packs opened into their messages (service/packs.py), then the shared delivery steps
          (service/delivery.py): attempts, dead-letter, the exactly-once claim, bodies (inline, or one S3
          range GET per raw object, or the Parquet archive); [a slow pull: ChangeMessageVisibilityBatch, so
          every lease counts from the answer (core/queueing/pull_leases.py)].
ack     : [exactly-once: one conditional update per message] -> [a pack's partial settling: one update per
          pack] -> DeleteMessageBatch.
modack  : [exactly-once: one conditional update per message] -> [as ack, for nacks] ->
          ChangeMessageVisibilityBatch (0 = nack).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from chalicelib.core import limits, live
from chalicelib.core.errors import FailedPrecondition, InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.queueing import pull_leases
from chalicelib.core.queueing.ackids import AckId
from chalicelib.core.queueing.deadletter import reports_attempts
from chalicelib.core.queueing.packs import keeps_whole, packable
from chalicelib.core.queueing.retry import expiry_visibility, nack_delay, redelivery_visibility
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import format_timestamp, parse_timestamp
from chalicelib.core.wire.requests import AcknowledgeRequest, ModifyAckDeadlineRequest, PullRequest
from chalicelib.core.wire.responses import Empty, PullResponse, ReceivedMessage
from chalicelib.observability import catalog, metrics
from chalicelib.service import transforms
from chalicelib.service.context import Context
from chalicelib.service.deadletter import DeadLetters, LastAttempts, parked_seconds
from chalicelib.service.delivery import Delivery, Steps, decode_received
from chalicelib.service.exactly_once import ExactlyOnce
from chalicelib.service.packs import Packs
from chalicelib.service.publish import PublishService

LINGER_STEP_SECONDS = 0.01

log = logging.getLogger(__name__)


class PullService:
    def __init__(self, ctx: Context, monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.ctx = ctx
        self.steps = Steps(ctx)
        self.dead_letters = DeadLetters(ctx, PublishService(ctx).append)
        self.last_attempts = LastAttempts(ctx, self.steps, self.dead_letters)
        self.exactly_once = ExactlyOnce(ctx)
        self.packs = Packs(ctx, self.exactly_once.let_go)
        self.monotonic = monotonic
        self.sleep = sleep

    def _subscription(self, name: Name) -> SubscriptionRecord:
        rec = self.ctx.resources.cached_subscription(name)
        if rec.spec.detached:
            raise FailedPrecondition(f"Subscription {name.path} is detached.")
        self.steps.activity.mark(name.path)
        return rec

    # -- pull -------------------------------------------------------------------------------
    def pull(self, name: Name, request: PullRequest) -> PullResponse:
        with metrics.operation(catalog.PULL, subscription=name.path) as tally:  # the long poll's wait included
            response = self._pull(name, request)
            tally.messages = len(response.received)
            metrics.oldest_age((m.publish_time for m in response.received), self.ctx.clock(), name.path)
            return response

    def _pull(self, name: Name, request: PullRequest) -> PullResponse:
        rec = self._subscription(name)
        if rec.spec.cloud_storage_config is not None:  # its messages go to files only (docs/export.md)
            raise FailedPrecondition(f"Subscription {name.path} is a Cloud Storage (export) subscription: its "
                                     "messages are written to its bucket and cannot be pulled.")
        # Visibility = ack deadline + the retry policy's backoff, so an expiry is followed by that backoff.
        wait = 0 if request.return_immediately else int(self.ctx.config.pull_wait_seconds)
        visibility = expiry_visibility(rec, rec.spec.ack_deadline, 1)
        deliveries, received_at = self._receive(rec, request.max_messages, wait, visibility)
        self.steps.count_attempts(rec, deliveries)
        deliveries = self._dead_letter(rec, deliveries)
        lease_id = self.ctx.ids.token()
        if rec.spec.enable_exactly_once_delivery:
            deliveries = self._claim(rec, lease_id, deliveries)
        if not deliveries:
            return PullResponse()
        later = {d.receipt: v for d in deliveries if (v := redelivery_visibility(rec, d.attempt)) is not None}
        later.update(self.last_attempts.remember(rec, deliveries))  # last attempts: their deadline plus a grace
        try:
            self._require_bodies(deliveries)
        finally:  # redeliveries: a longer backoff after their expiry; a slow pull's early receives: a full lease
            self._lease(rec, deliveries, received_at, visibility, later)
        self.ctx.counters.add(name, {live.DELIVERED: len(deliveries)}, self.ctx.clock())
        handed = Counter(d.pack for d in deliveries if d.pack)
        kept: dict[str, int] = defaultdict(int)  # ordered packs the pull split: a bit per message it holds
        for d in deliveries:
            if d.split:
                kept[d.pack] |= 1 << d.index
        if rec.spec.message_transforms:  # docs/transforms.md
            deliveries = self._transformed(name, rec, lease_id, deliveries, handed, kept)
        return PullResponse(tuple(self._received(name, rec, lease_id, d, handed[d.pack], kept.get(d.pack, 0))
                                  for d in deliveries))

    def _received(self, name: Name, rec: SubscriptionRecord, lease_id: str, d: Delivery,
                  handed: int, kept: int) -> ReceivedMessage:
        env = d.env
        assert env is not None and d.data is not None
        ack = self.ctx.ack_ids.encode(AckId(name.path, lease_id, env.message_id, d.receipt, rec.queue_gen, d.attempt,
                                            d.pack, d.index, d.pack_size, max(1, handed), kept))
        return ReceivedMessage(ack, env.message_id, format_timestamp(parse_timestamp(env.publish_time, "publish_time")),
                               d.data, env.attributes, env.ordering_key,
                               d.attempt if reports_attempts(rec) else None)

    def _transformed(self, name: Name, rec: SubscriptionRecord, lease_id: str, deliveries: list[Delivery],
                     handed: Counter[str], kept: dict[str, int]) -> list[Delivery]:
        """The subscription's transforms: a dropped message is acknowledged (through the ack path, so a pack member
        or an exactly-once lease settles as an ack would); one a transform fails on goes to the dead-letter topic,
        or without one is nacked (redelivered after the retry policy's backoff)."""
        out = transforms.for_delivery(self.ctx, rec, deliveries)

        def ack(d: Delivery) -> tuple[str, AckId]:
            assert d.env is not None
            a = AckId(name.path, lease_id, d.env.message_id, d.receipt, rec.queue_gen, d.attempt, d.pack, d.index,
                      d.pack_size, max(1, handed[d.pack]), kept.get(d.pack, 0))
            return self.ctx.ack_ids.encode(a), a

        failed = [d for d, _ in out.failed]
        for d, error in out.failed:
            log.warning("a message transform of %s failed on message %s: %s", name.path, d.message_id, error)
        if failed and rec.spec.dead_letter_policy is not None:
            forwarded = self.dead_letters.forward(rec, failed, ended=True)
            out.dropped.extend(forwarded.removed)  # sent to the dead-letter topic: settled
            failed = forwarded.parked
        if out.dropped:
            self._acknowledge(name, AcknowledgeRequest(tuple(ack(d)[0] for d in out.dropped)))
        if failed:
            self._modify_ack_deadline(name, ModifyAckDeadlineRequest(tuple(ack(d)[0] for d in failed), 0))
        return out.kept

    def _require_bodies(self, deliveries: Sequence[Delivery]) -> None:
        self.steps.fetch_bodies(deliveries)
        for d in deliveries:
            if d.data is None:
                raise FailedPrecondition(f"The body of message {d.message_id} is no longer stored.")

    def _dead_letter(self, rec: SubscriptionRecord, deliveries: list[Delivery]) -> list[Delivery]:
        """Forward messages past maxDeliveryAttempts instead of delivering them; drop undecodable ones."""
        due = self.dead_letters.due(rec, deliveries)
        undecodable = [d for d in deliveries if d.env is None]
        if not due and not undecodable:
            return deliveries
        self._require_bodies(due)
        out = self.dead_letters.forward(rec, due)
        removed = [d.receipt for d in [*out.removed, *undecodable]]
        if removed:
            self.ctx.queues.delete_batch(rec.queue_url, removed)
        if out.parked:  # not a delivery: the attempt count stays where it is
            self.steps.skipped(rec, out.parked)
            self.ctx.queues.change_visibility_batch(rec.queue_url,
                                                   [(d.receipt, parked_seconds(self.ctx)) for d in out.parked])
        gone = {id(d) for d in [*due, *undecodable]}
        return [d for d in deliveries if id(d) not in gone]

    def _claim(self, rec: SubscriptionRecord, token: str, deliveries: list[Delivery]) -> list[Delivery]:
        """Exactly-once: lease each message (or pack) by conditional write; drop acked duplicates and held ones."""
        kept, acked, held = self.exactly_once.claim(rec, token, deliveries)
        if acked:  # an already acknowledged duplicate: remove it for good
            self.ctx.queues.delete_batch(rec.queue_url, acked)
        self.steps.skipped(rec, held)
        return kept

    def _lease(self, rec: SubscriptionRecord, deliveries: Sequence[Delivery], received_at: dict[str, float],
               visibility: int, later: dict[str, int]) -> None:
        """One ChangeMessageVisibilityBatch per 10 receipts with a visibility of their own (``later``) or received
        longer than pull_leases.slack ago: a lease counts from the pull's answer (core/queueing/pull_leases.py)."""
        held = {d.receipt: received_at[d.receipt] for d in deliveries if d.receipt in received_at}
        changes = pull_leases.refreshed(pull_leases.stale(held, self.monotonic(), rec.spec.ack_deadline), visibility,
                                        later)
        if changes:
            self.ctx.queues.change_visibility_batch(rec.queue_url, changes)

    def _receive(self, rec: SubscriptionRecord, max_messages: int, wait: int,
                 visibility: int) -> tuple[list[Delivery], dict[str, float]]:
        """Long-poll for a first batch, then keep receiving until maxMessages or an empty receive (a publish
        request lands in the queue over a few concurrent sends, and a fuller pull saves a whole pull and
        ack request); after an empty receive, keep polling until the linger (METRO_PULL_LINGER_MS, default
        0) since the first message has passed. Each body is decoded once, here; packs are opened into their
        messages, and a receive asks for as many queue messages as the packs seen so far say will fill the
        pull. Also returns when each receipt was received (the injected monotonic clock): its lease's start.
        Cost decision: docs/decisions/cost-model.md."""
        got: list[Delivery] = []
        received_at: dict[str, float] = {}
        size, queued, opened = 0, 0, 0
        linger_until = 0.0
        while len(got) < max_messages:
            per_message = opened / queued if queued else 1.0
            want = min(10, max(1, math.ceil((max_messages - len(got)) / per_message)))
            received = self.ctx.queues.receive(rec.queue_url, want, wait if not got else 0, visibility)
            at = self.monotonic()
            received_at.update((r.receipt, at) for r in received)
            batch = [d for r in received for d in decode_received(r.body, r.receipt, r.receive_count)]
            queued, opened = queued + len(received), opened + len(batch)
            batch = self.packs.open(rec, batch)
            if not packable(rec):
                batch = self.packs.explode(rec, batch)
            keep: list[Delivery] = []
            for d in batch:
                size += d.size
                if len(got) + len(keep) >= max_messages or (size > limits.MAX_PULL_RESPONSE_BYTES and (got or keep)):
                    break
                keep.append(d)
            if keep and not got:
                linger_until = self.monotonic() + self.ctx.config.pull_linger_seconds
            got.extend(keep)
            if len(keep) < len(batch):  # over maxMessages or the response byte cap: hand the rest back at once
                self._hand_back(rec, got, batch[len(keep):], max_messages)
                break
            if not received:
                if not got or self.monotonic() >= linger_until:
                    break
                self.sleep(LINGER_STEP_SECONDS)
        return got, received_at

    def _hand_back(self, rec: SubscriptionRecord, got: Sequence[Delivery], rest: Sequence[Delivery],
                   max_messages: int) -> None:
        """Received but not handed out: queue messages none of whose messages this pull holds are visible again
        at once; the rest of a pack the pull holds some of goes back in packs of at most ``max_messages``, or, for
        an ordered or exactly-once subscription, stays in the pack (the messages handed out are marked ``split``)."""
        holding = {d.pack for d in got if d.pack}
        split = [d for d in rest if d.pack in holding]
        if split and keeps_whole(rec):
            for d in got:
                d.split = d.split or d.pack in {s.pack for s in split}
        elif split:
            self.packs.release(rec, split, max_messages)
        back = list(dict.fromkeys(d.receipt for d in rest if d.pack not in holding or not d.pack))
        if back:
            self.ctx.queues.change_visibility_batch(rec.queue_url, [(receipt, 0) for receipt in back])

    # -- ack / modack ------------------------------------------------------------------------
    def _open(self, name: Name, raw: tuple[str, ...]) -> tuple[SubscriptionRecord, list[tuple[str, AckId]]]:
        rec = self._subscription(name)
        codec = self.ctx.ack_ids
        acks = [(text, codec.decode(text, name.path)) for text in raw]
        # Ids of a deleted incarnation of the subscription are ignored.
        return rec, [(t, a) for t, a in acks if a.queue_gen == rec.queue_gen]

    @staticmethod
    def _raise_failures(failed: dict[str, str]) -> None:
        """The per-ack-id error, raised after the good ids were applied."""
        if failed:
            raise InvalidArgument("Some acknowledgement ids failed: they are expired, already acknowledged or "
                                  "unknown.", details=[{
                                      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                      "reason": "EXACTLY_ONCE_ACKID_FAILURE",
                                      "domain": "pubsub.googleapis.com",
                                      "metadata": failed,
                                  }])

    def acknowledge(self, name: Name, request: AcknowledgeRequest) -> Empty:
        with metrics.operation(catalog.ACKNOWLEDGE, subscription=name.path) as tally:
            done = self._acknowledge(name, request)
            tally.messages = len(request.ack_ids)
            return done

    def _acknowledge(self, name: Name, request: AcknowledgeRequest) -> Empty:
        rec, acks = self._open(name, request.ack_ids)
        now = self.ctx.clock()
        good, failed = (self.exactly_once.acknowledge(rec, acks, now) if rec.spec.enable_exactly_once_delivery
                        else ([a for _, a in acks], {}))
        if good:
            self.packs.acknowledge(rec, good, lambda a: nack_delay(rec, a.attempt))
            self.ctx.counters.add(name, {live.ACKED: len(good)}, now)
        self._raise_failures(failed)
        return Empty()

    def modify_ack_deadline(self, name: Name, request: ModifyAckDeadlineRequest) -> Empty:
        with metrics.operation(catalog.MODIFY_ACK_DEADLINE, subscription=name.path) as tally:
            done = self._modify_ack_deadline(name, request)
            tally.messages = len(request.ack_ids)
            return done

    def _modify_ack_deadline(self, name: Name, request: ModifyAckDeadlineRequest) -> Empty:
        seconds = request.ack_deadline_seconds
        rec, acks = self._open(name, request.ack_ids)
        now = self.ctx.clock()
        until = now + seconds if seconds else now - 0.001
        good, failed = (self.exactly_once.extend(rec, acks, until, now, nack=not seconds)
                        if rec.spec.enable_exactly_once_delivery else ([a for _, a in acks], {}))
        # A nack (deadline 0) redelivers at once, or after the retry policy's backoff; a new deadline keeps
        # the backoff that follows its expiry. A nacked last attempt goes to the dead-letter topic now.
        if seconds:
            last = self.last_attempts.extended(rec, good, seconds)
            changes = list({a.receipt: last.get(a.receipt) or expiry_visibility(rec, seconds, a.attempt)
                            for a in good}.items())
        else:
            nacked = self.last_attempts.nacked(rec, good)
            changes = self.packs.nack(rec, [(a, nack_delay(rec, a.attempt)) for a in nacked])
        if changes:
            self.ctx.queues.change_visibility_batch(rec.queue_url, changes)
        self._raise_failures(failed)
        return Empty()
