"""Push delivery: a Lambda SQS event of one push subscription's queue -> HTTP POSTs to its endpoint.

Per batch: bodies are resolved (inline, or one S3 range GET per raw object); messages are POSTed
(wrapped JSON, or raw bytes with ``noWrapper``) at most ``PushThrottle.max_outstanding`` at a time,
sleeping the throttle's delay between pushes for up to ``INLINE_WAIT`` s (later ones are *deferred*:
handed back with the remaining delay as visibility timeout); acks (102/200/201/202/204) go in one
DeleteMessageBatch, nacks (other statuses, timeouts, connection errors) in one
ChangeMessageVisibilityBatch delayed by the retry policy or else the throttle's pause; the throttle
state is stored once (not at all while healthy); nacked and deferred records are reported as
``batchItemFailures``. Ordered subscriptions (FIFO) push one message per key at a time, and a key's
first failure hands back the rest of that key, so order is kept.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from chalicelib.core import envelope, names
from chalicelib.core.backoff import NACK_FLOOR, PushThrottle, ThrottleState
from chalicelib.core.records import SubscriptionRecord
from chalicelib.delivery.push_request import Item, Poster, build_request, http_post
from chalicelib.service.context import Context
from chalicelib.service.deadletter import Attempts, forward, max_attempts, nack_delay, parked_seconds
from chalicelib.service.push_config import endpoint_allowed, push_token
from chalicelib.store.push_state import queue_key, queue_name_of

log = logging.getLogger(__name__)

ACK_CODES = frozenset({102, 200, 201, 202, 204})
INLINE_WAIT = 2.0  # seconds of throttle delay one invocation may sleep through; the rest is deferred
MIN_PUSH_TIME = 5.0  # ... provided that the pushes keep this much of their timeout
CACHE_TTL = 2.0  # how long a warm handler trusts its copy of a subscription
ACTIVITY_MARK = 3600.0  # record a push subscription's activity at most this often
TIMEOUT_MARGIN = 0.5  # a push times out this much before the ack deadline (counted from the receive)



# -- outcomes -------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    acked: bool
    visibility: int = 0  # for failures: seconds until the message may be delivered again


@dataclass
class Batch:
    rec: SubscriptionRecord
    throttle: PushThrottle
    items: list[Item]
    started: float
    deadline: float  # monotonic time after which the invocation must not wait any more
    timeout: float
    results: dict[str, Outcome] = field(default_factory=dict)
    counted: int = 0
    pushed: set[str] = field(default_factory=set)  # records POSTed in this batch (delivery attempts)


def _seconds(value: float) -> int:
    return max(0, min(43_200, math.ceil(value)))


class PushDelivery:
    def __init__(self, ctx: Context, post: Poster = http_post, sleep: Callable[[float], None] = time.sleep,
                 workers: int = 32) -> None:
        self.ctx = ctx
        self.push = ctx.push
        self.attempts = Attempts(ctx)
        self._post = post
        self._sleep = sleep
        self._pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="metro-push")
        self._subs: dict[str, tuple[float, SubscriptionRecord | None]] = {}  # queue key -> (expiry, record)
        self._names: dict[str, str] = {}
        self._active: dict[str, float] = {}  # subscription -> when its activity was last recorded
        self._lock = threading.Lock()

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

    # -- one queue's records ------------------------------------------------------------------------
    def subscription(self, arn: str) -> SubscriptionRecord | None:
        """The subscription whose queue is ``arn`` (push or not; cached briefly), or None if unknown."""
        key = queue_key(arn)
        now = time.monotonic()
        with self._lock:
            cached, name = self._subs.get(key), self._names.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        name = name or self.push.index_get(key)  # a queue key always belongs to the same name
        rec = self.ctx.resources.get_subscription(names.parse(name, "subscriptions")) if name else None
        with self._lock:
            if name:
                self._names[key] = name
            self._subs[key] = (now + CACHE_TTL, rec)
        return rec

    def _queue_batch(self, arn: str, records: list[dict[str, Any]], context: Any) -> dict[str, Outcome]:
        rec = self.subscription(arn)
        ordered = arn.endswith(".fifo")
        items = [self._item(r, ordered) for r in records]
        if rec is None or queue_name_of(rec.queue_url) != queue_name_of(arn):
            log.info("queue %s belongs to no subscription now; %d message(s) left", arn, len(items))
            return {i.sqs_id: Outcome(False) for i in items}  # visible again after their visibility timeout
        self._count_attempts(rec, items)
        if not rec.spec.is_push or rec.spec.detached:  # switched to pull: hand them to pullers at once
            self.attempts.skipped(rec, {i.env.message_id: i.skips for i in items if i.env is not None})
            self.ctx.queues.change_visibility_batch(rec.queue_url, [(i.receipt, 0) for i in items])
            return {i.sqs_id: Outcome(False) for i in items}
        self._resolve_bodies(items)
        throttle = PushThrottle(self.push.load_throttle(rec.name))
        before = ThrottleState(**throttle.state.to_dict())
        timeout, now = self._timeout(rec, context), time.monotonic()
        # Waiting eats into the pushes' time (all end by started + timeout): keep MIN_PUSH_TIME for them.
        batch = Batch(rec, throttle, items, now, now + min(INLINE_WAIT, max(0.0, timeout - MIN_PUSH_TIME)), timeout)
        self._run(batch)
        self.attempts.skipped(rec, {i.env.message_id: i.skips for i in items if i.env is not None
                                    and i.sqs_id not in batch.pushed and not batch.results.get(i.sqs_id, _ACK).acked})
        self._settle(batch)
        try:  # the outcomes are settled: bookkeeping failures must not turn them into failures
            if batch.counted and _worth_saving(before, throttle.state):
                self.push.save_throttle(rec.name, throttle.state)
            self._mark_active(rec, batch)
        except Exception:
            log.exception("push bookkeeping for %s failed", rec.name)
        return batch.results

    def _item(self, record: dict[str, Any], ordered: bool) -> Item:
        attrs = record.get("attributes") or {}
        try:
            env: envelope.Envelope | None = envelope.decode(record.get("body", ""))
        except (ValueError, KeyError, TypeError):
            log.error("message %s has a malformed body; it is dropped", record.get("messageId"))
            env = None
        group = str(attrs.get("MessageGroupId", "")) if ordered else ""
        return Item(str(record["messageId"]), str(record["receiptHandle"]),
                    int(attrs.get("ApproximateReceiveCount", "1")), group or str(record["messageId"]), env,
                    env.data if env is not None else None)

    def _count_attempts(self, rec: SubscriptionRecord, items: list[Item]) -> None:
        """deliveryAttempt = receive count - receives that were not deliveries (one read, redeliveries only)."""
        skips = self.attempts.skips(rec, [(i.env.message_id, i.attempt) for i in items if i.env is not None])
        for i in items:
            if i.env is not None and i.env.message_id in skips:
                i.skips = skips[i.env.message_id]
                i.attempt = max(1, i.attempt - i.skips)

    def _resolve_bodies(self, items: list[Item]) -> None:
        """Bodies stored in S3: one range GET per raw object covering the batch's messages."""
        spans: dict[str, tuple[int, int]] = {}
        for i in items:
            if i.env is not None and not i.env.inline:
                lo, hi = spans.get(i.env.s3_key, (i.env.offset, i.env.offset + i.env.length))
                spans[i.env.s3_key] = (min(lo, i.env.offset), max(hi, i.env.offset + i.env.length))
        blobs = {key: (lo, self.ctx.log.read_range(key, lo, hi)) for key, (lo, hi) in spans.items()}
        gone: dict[str, list[str]] = {}  # raw objects compaction deleted: read from the archive
        for i in items:
            if i.env is not None and not i.env.inline:
                lo, blob = blobs[i.env.s3_key]
                if blob is not None:
                    i.data = blob[i.env.offset - lo : i.env.offset - lo + i.env.length]
                else:
                    gone.setdefault(i.env.s3_key, []).append(i.env.message_id)
        archived: dict[str, bytes] = {}
        for key, ids in gone.items():
            archived.update(self.ctx.log.read_archived(key, ids))
        for i in items:
            if i.data is None and i.env is not None and i.env.message_id in archived:
                i.data = archived[i.env.message_id]

    def _timeout(self, rec: SubscriptionRecord, context: Any) -> float:
        """Every push of the batch ends by this many seconds after the batch started."""
        timeout = rec.spec.ack_deadline - TIMEOUT_MARGIN
        if self.ctx.config.push_timeout_seconds > 0:
            timeout = min(timeout, self.ctx.config.push_timeout_seconds)
        if context is not None:
            timeout = min(timeout, context.get_remaining_time_in_millis() / 1000.0 - 1.0)
        return max(0.5, timeout)

    # -- delivery -----------------------------------------------------------------------------------
    def _run(self, batch: Batch) -> None:
        """Push the batch's messages, honouring the throttle's delay and concurrency window."""
        rec, throttle = batch.rec, batch.throttle
        assert rec.spec.push_config is not None
        if not endpoint_allowed(self.ctx.config, rec.spec.push_config.push_endpoint):
            for i in batch.items:
                batch.results[i.sqs_id] = Outcome(False, rec.spec.ack_deadline)
            return
        lanes: dict[str, deque[Item]] = {}
        limit = max_attempts(rec)
        for i in batch.items:
            if i.env is None:  # undecodable: it can never be delivered
                batch.results[i.sqs_id] = Outcome(True)
            elif i.data is None:  # the body is gone from S3: leave it, not the endpoint's fault
                log.error("body of message %s is no longer stored", i.env.message_id)
                batch.results[i.sqs_id] = Outcome(False, rec.spec.ack_deadline)
            elif limit and i.attempt > limit:  # past maxDeliveryAttempts: to the dead-letter topic
                env = i.env
                ok = forward(self.ctx, rec, i.data, env.attributes, env.ordering_key, i.attempt - 1, env.publish_time)
                batch.results[i.sqs_id] = Outcome(True) if ok else Outcome(False, parked_seconds(self.ctx))
            else:
                lanes.setdefault(i.group, deque()).append(i)
        flying: dict[cf.Future[int | None], tuple[str, Item]] = {}
        while True:
            ready = [g for g, lane in lanes.items() if lane and all(g != f[0] for f in flying.values())]
            if not ready and not flying:
                return
            timeout: float | None = None
            if ready and len(flying) < throttle.max_outstanding(self.ctx.clock()):
                wait = throttle.delay(self.ctx.clock())
                if wait <= 0:
                    item = lanes[ready[0]].popleft()
                    flying[self._pool.submit(self._push_one, batch, item)] = (ready[0], item)
                    batch.pushed.add(item.sqs_id)
                    continue
                if not flying:
                    if time.monotonic() + wait > batch.deadline:
                        for lane in lanes.values():  # defer: back in the queue once the pause is over
                            for i in lane:
                                batch.results[i.sqs_id] = Outcome(False, max(1, _seconds(wait)))
                        return
                    self._sleep(wait)
                    continue
                timeout = wait
            done, _ = cf.wait(flying, timeout=timeout, return_when=cf.FIRST_COMPLETED)
            for future in done:
                group, item = flying.pop(future)
                status = future.result()
                acked = status in ACK_CODES
                throttle.record(acked, self.ctx.clock())
                batch.counted += 1
                if acked:
                    batch.results[item.sqs_id] = Outcome(True)
                    continue
                batch.results[item.sqs_id] = Outcome(False, self._nack_delay(rec, item, throttle))
                if item.group != item.sqs_id:  # ordered: the rest of this key waits for the retry
                    for rest in lanes.pop(group, deque()):
                        batch.results[rest.sqs_id] = Outcome(False, 0)

    def _push_one(self, batch: Batch, item: Item) -> int | None:
        rec = batch.rec
        pc = rec.spec.push_config
        assert pc is not None
        token = None
        if pc.oidc_token is not None:
            token = push_token(self.ctx.config, pc.oidc_token.service_account_email,
                               pc.oidc_token.audience or pc.push_endpoint, self.ctx.clock())
            if token is None:
                return None
        body, headers = build_request(rec, item, token)
        elapsed = time.monotonic() - batch.started
        return self._post(pc.push_endpoint, body, headers, max(0.5, batch.timeout - elapsed))

    def _mark_active(self, rec: SubscriptionRecord, batch: Batch) -> None:
        """A successful push is subscriber activity (expirationPolicy); one write per hour at most."""
        now = self.ctx.clock()
        if any(o.acked for o in batch.results.values()) and now - self._active.get(rec.name, 0.0) > ACTIVITY_MARK:
            self._active[rec.name] = now
            self.ctx.resources.mark_active(names.parse(rec.name, "subscriptions"), now)

    @staticmethod
    def _nack_delay(rec: SubscriptionRecord, item: Item, throttle: PushThrottle) -> int:
        """The retry policy's backoff when the subscription has one, else the throttle's pause."""
        if rec.spec.retry_policy is not None:
            return nack_delay(rec, item.attempt)
        return _seconds(throttle.pause())

    # -- settle -------------------------------------------------------------------------------------
    def _settle(self, batch: Batch) -> None:
        """One DeleteMessageBatch for the acks, one ChangeMessageVisibilityBatch for the rest."""
        done = [(i.receipt, batch.results[i.sqs_id]) for i in batch.items if i.sqs_id in batch.results]
        acked = [receipt for receipt, outcome in done if outcome.acked]
        later = [(receipt, outcome.visibility) for receipt, outcome in done if not outcome.acked]
        if acked and self.ctx.queues.delete_batch(batch.rec.queue_url, acked):
            log.warning("some acked messages of %s were not deleted (they may come again)", batch.rec.name)
        if later:
            self.ctx.queues.change_visibility_batch(batch.rec.queue_url, later)


_ACK = Outcome(True)  # stands for a record without an outcome: nothing to count


class PushNotAcked(Exception):
    """Raised for a record that was not acknowledged (it goes into batchItemFailures)."""


def _worth_saving(before: ThrottleState, after: ThrottleState) -> bool:
    """Skip the write while a subscription stays healthy (no recent nacks, a full window)."""
    def quiet(s: ThrottleState) -> bool:
        return s.nacks < NACK_FLOOR and s.streak == 0

    return not (quiet(before) and quiet(after) and before.window >= 10)


_CURRENT: tuple[Context, PushDelivery] | None = None
_CURRENT_LOCK = threading.Lock()


def push_delivery(ctx: Context) -> PushDelivery:
    """The handler of this process for ``ctx`` (kept warm: connection pools, caches, threads)."""
    global _CURRENT
    with _CURRENT_LOCK:
        if _CURRENT is None or _CURRENT[0] is not ctx:
            _CURRENT = (ctx, PushDelivery(ctx))
        return _CURRENT[1]
