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
"""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from chalicelib.core import payload
from chalicelib.core.errors import MetroError, Unavailable
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.service.enqueue import enqueue, wants
from chalicelib.store.log import entry_from_item

log = logging.getLogger(__name__)


class FanOut:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def deliver(self, entry: LogEntry, subs: list[SubscriptionRecord]) -> int:
        """Enqueue one publish request's messages for the given subscriptions; returns messages sent."""
        if not any(wants(s, entry) for s in subs):
            return 0
        blob = self.ctx.log.read_object(entry.key)
        if blob is None:
            log.error("raw object %s is missing; its messages cannot be fanned out", entry.key)
            return 0
        header, messages = payload.decode(blob)
        sent, failed = enqueue(self.ctx, entry, header, messages, subs)
        if failed:
            raise Unavailable(f"messages of {entry.request_id} were not enqueued for {', '.join(failed)}")
        return sent

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
            self.deliver(entry, cache[entry.topic])
            self.ctx.log.mark_fanned(entry)

        processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                             context=context))
