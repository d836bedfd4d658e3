"""Push delivery: a Lambda SQS event of one push subscription's queue -> HTTP POSTs to its endpoint.

Per batch: the shared delivery steps (service/delivery.py) decode the records, count their delivery
attempts and resolve their bodies (inline, one S3 range GET per raw object, or the archive); the
messages are sorted into lanes (delivery/lanes.py; undecodable, body missing and past
maxDeliveryAttempts ones never reach the endpoint) and POSTed by the scheduler (delivery/scheduler.py:
wrapped JSON, or raw bytes with ``noWrapper``) within the throttle's window and delay; acks
(102/200/201/202/204) go in one DeleteMessageBatch, nacks (other statuses, timeouts, connection
errors) and deferrals in one ChangeMessageVisibilityBatch; the throttle state is stored once (not at
all while healthy); nacked and deferred records are reported as ``batchItemFailures``.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from chalicelib.core import live, names
from chalicelib.core.queueing.backoff import NACK_FLOOR, PushThrottle, ThrottleState
from chalicelib.core.queueing.deadletter import is_last_attempt
from chalicelib.core.queueing.retry import nack_delay
from chalicelib.core.records import SubscriptionRecord
from chalicelib.delivery import ams_batches, lanes
from chalicelib.delivery.push_request import Item, Poster, build_batch_request, build_request, http_poster
from chalicelib.delivery.scheduler import ACKED, Batch, Clock, Outcome, Scheduler
from chalicelib.observability import catalog, metrics
from chalicelib.service import transforms
from chalicelib.service.ams import push_ready
from chalicelib.service.context import Context
from chalicelib.service.deadletter import DeadLetters, parked_seconds
from chalicelib.service.delivery import Delivery, Steps, SubscriptionCache, decode_received
from chalicelib.service.packs import Packs
from chalicelib.service.publish import PublishService
from chalicelib.service.push_config import endpoint_allowed, push_token
from chalicelib.store.push_state import queue_key, queue_name_of

log = logging.getLogger(__name__)

INLINE_WAIT = 2.0  # seconds of throttle delay one invocation may sleep through; the rest is deferred
MIN_PUSH_TIME = 5.0  # ... provided that the pushes keep this much of their timeout
CACHE_TTL = 2.0  # how long a warm handler trusts its copy of a subscription
TIMEOUT_MARGIN = 0.5  # a push times out this much before the ack deadline (counted from the receive)


class PushDelivery:
    def __init__(self, ctx: Context, post: Poster | None = None, sleep: Callable[[float], None] = time.sleep,
                 workers: int = 32, monotonic: Clock = time.monotonic) -> None:
        self.ctx = ctx
        self.steps = Steps(ctx)
        self.packs = Packs(ctx)
        self.dead_letters = DeadLetters(ctx, PublishService(ctx).append)
        self.subscriptions = SubscriptionCache(ctx, CACHE_TTL, monotonic)
        self.monotonic = monotonic
        self._post = post or http_poster(ctx.resolver)
        pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="metro-push")
        self.scheduler = Scheduler(pool, self._push_one, ctx.clock, monotonic, sleep)

    # -- entry point --------------------------------------------------------------------------------
    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """Lambda SQS event in, ``{"batchItemFailures": [...]}`` out."""
        if not event.get("Records"):
            return {"batchItemFailures": []}
        by_queue: dict[str, list[dict[str, Any]]] = {}
        for record in event.get("Records", []):
            by_queue.setdefault(record.get("eventSourceARN", ""), []).append(record)
        results: dict[str, Outcome] = {}
        for arn, records in by_queue.items():
            try:
                results.update(self._queue_batch(arn, records, context))
            except Exception:  # the whole batch returns to the queue after its visibility timeout
                log.exception("push batch from %s failed", arn)

        def record_handler(record: SQSRecord) -> None:
            outcome = results.get(record.message_id)
            if outcome is None or not outcome.acked:
                raise PushNotAcked(record.message_id)

        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                             context=context))

    def subscription(self, arn: str) -> SubscriptionRecord | None:
        """The subscription whose queue is ``arn`` (push or not; cached briefly), or None if unknown."""
        return self.subscriptions.get(queue_key(arn))

    # -- one queue's records ------------------------------------------------------------------------
    def _queue_batch(self, arn: str, records: list[dict[str, Any]], context: Any) -> dict[str, Outcome]:
        rec = self.subscription(arn)
        ordered = arn.endswith(".fifo")
        deliveries = [d for r in records for d in _deliveries(r, ordered)]
        if rec is None or queue_name_of(rec.queue_url) != queue_name_of(arn):
            log.info("queue %s belongs to no subscription now; %d message(s) left", arn, len(deliveries))
            return {d.key: Outcome(False) for d in deliveries}  # visible again after their visibility timeout
        self.steps.count_attempts(rec, deliveries)
        if not rec.spec.is_push or rec.spec.detached:  # switched to pull: hand them to pullers at once
            self.steps.skipped(rec, deliveries)
            self.ctx.queues.change_visibility_batch(rec.queue_url,
                                                    [(r, 0) for r in dict.fromkeys(d.receipt for d in deliveries)])
            return {d.key: Outcome(False) for d in deliveries}
        exploded = self._explode(rec, deliveries)
        deliveries = [d for d in deliveries if not d.pack]
        if not deliveries:
            return exploded
        self.steps.fetch_bodies(deliveries)
        settled: dict[str, Outcome] = {}
        if rec.spec.message_transforms:
            deliveries, settled = self._transformed(rec, deliveries)
            if not deliveries:
                return {**exploded, **settled}
        throttle = PushThrottle(self.ctx.push.load_throttle(rec.name))
        before = ThrottleState(**throttle.state.to_dict())
        timeout, now = self._timeout(rec, context), self.monotonic()
        # Waiting eats into the pushes' time (all end by started + timeout): keep MIN_PUSH_TIME for them.
        batch = Batch(rec, throttle, deliveries, now, now + min(INLINE_WAIT, max(0.0, timeout - MIN_PUSH_TIME)),
                      timeout)
        self._deliver(batch)
        self._end_last_attempts(batch)
        self.steps.skipped(rec, [d for d in deliveries
                                 if d.key not in batch.pushed and not batch.results.get(d.key, ACKED).acked])
        self._settle(batch)
        self._count(batch)
        try:  # the outcomes are settled: bookkeeping failures must not turn them into failures
            if batch.counted and _worth_saving(before, throttle.state):
                self.ctx.push.save_throttle(rec.name, throttle.state)
            if any(o.acked for o in batch.results.values()):  # subscriber activity (expirationPolicy)
                self.steps.activity.mark(rec.name)
        except Exception:
            log.exception("push bookkeeping for %s failed", rec.name)
        return {**exploded, **settled, **batch.results}

    def _transformed(self, rec: SubscriptionRecord, deliveries: list[Delivery]) -> tuple[list[Delivery],
                                                                                       dict[str, Outcome]]:
        """The subscription's message transforms (docs/transforms.md): the deliveries to push, and the outcomes of
        the others. A dropped message is acknowledged; one a transform fails on goes to the dead-letter topic, or
        without one is nacked (the retry policy's backoff)."""
        shaped = transforms.for_delivery(self.ctx, rec, deliveries)
        removed, failed = list(shaped.dropped), transforms.failures(rec, shaped)
        if failed and rec.spec.dead_letter_policy is not None:
            forwarded = self.dead_letters.forward(rec, failed, ended=True)
            removed, failed = removed + forwarded.removed, forwarded.parked
        if removed:
            self.ctx.queues.delete_batch(rec.queue_url, [d.receipt for d in removed])
        if failed:
            self.ctx.queues.change_visibility_batch(rec.queue_url, [(d.receipt, nack_delay(rec, d.attempt))
                                                                    for d in failed])
        return shaped.kept, {**{d.key: ACKED for d in removed}, **{d.key: Outcome(False) for d in failed}}

    def _explode(self, rec: SubscriptionRecord, deliveries: list[Delivery]) -> dict[str, Outcome]:
        """Packs (sent while the subscription pulled) go back to the queue one message per queue message, and
        their records count as done (the packs are deleted)."""
        packed = [d for d in deliveries if d.pack]
        if packed:
            self.packs.explode(rec, self.packs.open(rec, packed))
        return {d.key: ACKED for d in packed}  # the key of a pack's messages: its record's SQS message id

    def _timeout(self, rec: SubscriptionRecord, context: Any) -> float:
        """Every push of the batch ends by this many seconds after the batch started."""
        timeout = rec.spec.ack_deadline - TIMEOUT_MARGIN
        if self.ctx.config.push_timeout_seconds > 0:
            timeout = min(timeout, self.ctx.config.push_timeout_seconds)
        if context is not None:
            timeout = min(timeout, context.get_remaining_time_in_millis() / 1000.0 - 1.0)
        return max(0.5, timeout)

    # -- delivery -----------------------------------------------------------------------------------
    def _deliver(self, batch: Batch) -> None:
        """Outcomes for the messages that never reach the endpoint; the scheduler pushes the lanes."""
        rec = batch.rec
        assert rec.spec.push_config is not None
        if not (endpoint_allowed(self.ctx.resolver, rec.spec.push_config.push_endpoint) and push_ready(self.ctx, rec)):
            batch.results.update({d.key: Outcome(False, rec.spec.ack_deadline) for d in batch.deliveries})
            return
        sorted_ = lanes.sort(rec, batch.deliveries)
        for d in sorted_.undecodable:  # it can never be delivered
            batch.results[d.key] = ACKED
        for d in sorted_.missing:  # not the endpoint's fault: leave it for its visibility timeout
            log.error("body of message %s is no longer stored", d.message_id)
            batch.results[d.key] = Outcome(False, rec.spec.ack_deadline)
        if sorted_.dead:
            out = self.dead_letters.forward(rec, sorted_.dead)
            batch.results.update({d.key: ACKED for d in out.removed})
            batch.results.update({d.key: Outcome(False, parked_seconds(self.ctx)) for d in out.parked})
        size = ams_batches.chunk_size(rec)
        self.scheduler.run(batch, ams_batches.group(batch, sorted_.lanes, size) if size > 1 else sorted_.lanes)
        ams_batches.spread(batch)

    def _end_last_attempts(self, batch: Batch) -> None:
        """A last attempt that was not acknowledged goes to the dead-letter topic now, not on its next receive."""
        rec = batch.rec
        ended = [d for d in batch.deliveries if d.key in batch.pushed and d.data is not None
                 and not batch.results.get(d.key, ACKED).acked and is_last_attempt(rec, d.attempt)]
        if ended:
            out = self.dead_letters.forward(rec, ended, ended=True)
            batch.results.update({d.key: ACKED for d in out.removed})
            batch.results.update({d.key: Outcome(False, parked_seconds(self.ctx)) for d in out.parked})

    def _push_one(self, batch: Batch, d: Delivery) -> int | None:
        rec = batch.rec
        pc = rec.spec.push_config
        assert pc is not None
        token = None
        if pc.oidc_token is not None:
            token = push_token(self.ctx.config, names.parse(rec.name, "subscriptions").project,
                               pc.oidc_token.service_account_email,
                               pc.oidc_token.audience or pc.push_endpoint, self.ctx.clock())
            if token is None:
                return None
        chunk = batch.chunks.get(d.key)
        if chunk is not None:
            items = [Item(c.key, c.receipt, c.attempt, c.group, c.env, c.data, c.skips) for c in chunk]
            body, headers = build_batch_request(rec, items, token)
        else:
            body, headers = build_request(rec, Item(d.key, d.receipt, d.attempt, d.group, d.env, d.data, d.skips),
                                          token)
        elapsed, started = self.monotonic() - batch.started, time.perf_counter()
        try:
            return self._post(pc.push_endpoint, body, headers, max(0.5, batch.timeout - elapsed))
        finally:
            metrics.elapsed(catalog.PUSH_LATENCY, started)

    def _count(self, batch: Batch) -> None:
        """The batch's deliveries and acknowledgements, for the live counters (core/live.py) and the metrics."""
        pushed = [k for k in batch.pushed if k in batch.results]
        if pushed:
            name = names.parse(batch.rec.name, "subscriptions")
            acked = sum(1 for k in pushed if batch.results[k].acked)
            metrics.add(catalog.PUSH_DELIVERIES, len(pushed), subscription=batch.rec.name)
            metrics.add(catalog.PUSH_ACKED, acked)
            metrics.add(catalog.PUSH_FAILURES, len(pushed) - acked, subscription=batch.rec.name)
            metrics.add(catalog.PUSH_FAILURE_RATE, 100.0 * (len(pushed) - acked) / len(pushed), metrics.PERCENT)
            metrics.oldest_age((d.env.publish_time for d in batch.deliveries if d.key in batch.pushed and d.env),
                               self.ctx.clock(), batch.rec.name)
            self.ctx.counters.add(name, {live.DELIVERED: len(pushed), live.ACKED: acked}, self.ctx.clock())

    # -- settle -------------------------------------------------------------------------------------
    def _settle(self, batch: Batch) -> None:
        """One DeleteMessageBatch for the acks, one ChangeMessageVisibilityBatch for the rest."""
        done = [(d.receipt, batch.results[d.key]) for d in batch.deliveries if d.key in batch.results]
        acked = [receipt for receipt, outcome in done if outcome.acked]
        later = [(receipt, outcome.visibility) for receipt, outcome in done if not outcome.acked]
        if acked and self.ctx.queues.delete_batch(batch.rec.queue_url, acked):
            log.warning("some acked messages of %s were not deleted (they may come again)", batch.rec.name)
        if later:
            self.ctx.queues.change_visibility_batch(batch.rec.queue_url, later)


def _deliveries(record: dict[str, Any], ordered: bool) -> list[Delivery]:
    """The message of one record of the Lambda event (or the messages of a pack); its lane is its message group
    when ordered, else its own."""
    attrs = record.get("attributes") or {}
    sqs_id = str(record["messageId"])
    group = str(attrs.get("MessageGroupId", "")) if ordered else ""
    return decode_received(record.get("body", ""), str(record["receiptHandle"]),
                           int(attrs.get("ApproximateReceiveCount", "1")), sqs_id, group or sqs_id)


class PushNotAcked(Exception):
    """Raised for a record that was not acknowledged (it goes into batchItemFailures)."""


def _worth_saving(before: ThrottleState, after: ThrottleState) -> bool:
    """Skip the write while a subscription stays healthy (no recent nacks, a full window)."""
    def quiet(s: ThrottleState) -> bool:
        return s.nacks < NACK_FLOOR and s.streak == 0

    return not (quiet(before) and quiet(after) and before.window >= 10)


class _Warm:
    """The push handler this process keeps warm (connection pools, caches, threads) and the context it serves."""

    lock = threading.Lock()
    held: tuple[Context, PushDelivery] | None = None


def push_delivery(ctx: Context) -> PushDelivery:
    """The handler of this process for ``ctx``: one per context, built on first use."""
    with _Warm.lock:
        if _Warm.held is None or _Warm.held[0] is not ctx:
            _Warm.held = (ctx, PushDelivery(ctx))
        return _Warm.held[1]
