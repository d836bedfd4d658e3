"""Fan-out from the messages table's stream: the fallback path for publish requests publish did not fan out.

Publish normally enqueues its messages itself and marks the log item ``fanned``; records of such
items are skipped here. Otherwise (direct fan-out disabled, or a queue send failed during publish)
one stream record is one publish request: one consistent Query for the topic's subscriptions
(shared by all records of the topic in the batch), one S3 GET of the raw object (only when some
subscription wants a message), then the sends (service/enqueue.py). A subscription that already
received the messages during publish gets them again: at-least-once, never lost.

A record fails (and Lambda hands it back) only while some send still fails after the queue store's own
retries, which resend just the entries that failed; a message SQS refuses as invalid is logged and
counted by enqueue and never holds the shard.

A topic wider than METRO_FANOUT_SLICE_SUBSCRIPTIONS is spread (core/fanout_slices.py,
docs/decisions/wide-fanout.md): the lane sends to the subscriptions that order by key itself, records the
other subscriptions' slices as pending and invokes the fan-out function once per slice, asynchronously. Each
slice sends, then counts itself done; the slice that finishes last marks the log item fanned. A slice that
fails is retried alone (Lambda retries an asynchronous invocation twice); one that never succeeds leaves the
item unfanned, and the maintenance catch-up fans the request out again in full.
"""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from chalicelib.core import fanout_slices, payload
from chalicelib.core.errors import MetroError, Unavailable
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.service.enqueue import enqueue, wants
from chalicelib.store.log import entry_from_item

log = logging.getLogger(__name__)


class FanOut:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # slice events' subscription records, encoded once per invocation (the batch's records share their list)
        self._encoded: dict[int, tuple[SubscriptionRecord, tuple[fanout_slices.Record, int]]] = {}

    def _encode(self, rec: SubscriptionRecord) -> tuple[fanout_slices.Record, int]:
        found = self._encoded.get(id(rec))
        if found is None:
            found = self._encoded[id(rec)] = (rec, fanout_slices.encoded(rec))  # held: its id is not reused
        return found[1]

    def deliver(self, entry: LogEntry, subs: list[SubscriptionRecord]) -> int:
        """Enqueue one publish request's messages for the given subscriptions; returns messages sent."""
        if not any(wants(s, entry) for s in subs):
            return 0
        blob = self.ctx.log.read_blob(entry)
        if blob is None:
            log.error("raw object %s is missing; its messages cannot be fanned out", entry.key)
            return 0
        header, messages = payload.decode(blob)
        sent, failed = enqueue(self.ctx, entry, header, messages, subs)
        if failed:
            raise Unavailable(f"messages of {entry.request_id} were not enqueued for {', '.join(failed)}")
        return sent

    def fan_out(self, entry: LogEntry, subs: list[SubscriptionRecord]) -> None:
        """The stream's fan-out of one publish request: all of it here, or its slices handed out."""
        wanting = [s for s in subs if wants(s, entry)]
        plan = fanout_slices.split(wanting, self.ctx.config.fanout_slice_subscriptions, encode=self._encode)
        if not plan.slices:
            self.deliver(entry, wanting)
            self.ctx.log.mark_fanned(entry)
            return
        self.deliver(entry, plan.in_lane)  # before the slices: a failure here hands them out only once
        self.ctx.slices.expect(entry.request_id, [cut.id for cut in plan.slices], entry.expires)
        self.ctx.slices.invoke(self.ctx.config.fanout_function,
                               [fanout_slices.slice_event(entry, cut) for cut in plan.slices])
        log.info("fan-out of %s: %d subscriptions in %d slices, %d ordered in the lane", entry.request_id,
                 len(wanting) - len(plan.in_lane), len(plan.slices), len(plan.in_lane))

    def run_slice(self, event: dict[str, Any]) -> dict[str, Any]:
        """One slice (an asynchronous invocation): its sends, then its completion. A failed send raises, so that
        Lambda retries this slice alone."""
        job = fanout_slices.parse_slice_event(event)
        sent = self.deliver(job.entry, job.subs)
        last = self.ctx.slices.finish(job.entry.request_id, job.id)
        if last:
            self.ctx.log.mark_fanned(job.entry)
        return {"slice": job.id, "sent": sent, "last": last}

    def catch_up(self, published_before: float, limit: int, budget_seconds: float) -> int:
        """Fan out again what is still marked unfanned long after its publish: records the stream handler never
        saw (fan-out disabled or failing for longer than the stream keeps records, 24 hours) or gave up on
        (the mapping's maximum record age). At-least-once: a subscription that got some of these messages
        before the outage gets them again. Returns the entries fanned out; one that fails waits for the next
        run."""
        started, done = self.ctx.clock(), 0
        subscriptions: dict[str, list[SubscriptionRecord]] = {}
        for entry in self.ctx.log.unfanned(published_before, limit):
            try:
                if entry.topic not in subscriptions:
                    subscriptions[entry.topic], _ = self.ctx.resources.topic_subscriptions(entry.topic)
                self.deliver(entry, subscriptions[entry.topic])
            except MetroError as exc:
                log.warning("fan-out catch-up of %s failed (%s); the next run retries it", entry.request_id, exc)
                continue
            self.ctx.log.mark_fanned(entry)
            done += 1
            if self.ctx.clock() - started > budget_seconds:
                break
        if done:
            log.warning("fan-out catch-up: fanned out %d publish requests the stream had not", done)
        return done

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """The stream handler: Lambda event in, partial batch failure report out."""
        cache: dict[str, list[SubscriptionRecord]] = {}

        def record_handler(record: DynamoDBRecord) -> None:
            if record.event_name is None or record.event_name.name != "INSERT":
                return
            image = record.raw_event["dynamodb"]["NewImage"]
            entry = entry_from_item(image)
            if entry.fanned:
                return
            if entry.topic not in cache:
                cache[entry.topic], _ = self.ctx.resources.topic_subscriptions(entry.topic)
            self.fan_out(entry, cache[entry.topic])

        processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                             context=context))
