"""Fan-out: from a messages-table stream record to every live subscription's SQS queue.

One stream record is one publish request. Per record: one consistent Query for the topic's
subscriptions (shared by all records of the topic in the batch), one S3 GET of the raw object
(only when some subscription wants a message), then SendMessageBatch per subscription, ten
messages per call. Small bodies are copied inline into the queue message; large ones travel
as an S3 pointer and are read with a range GET when delivered.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from chalicelib.core import envelope, ids, payload
from chalicelib.core.errors import Unavailable
from chalicelib.core.filters import Filter, parse_filter
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.store.log import LogEntry
from chalicelib.store.queues import Outgoing

log = logging.getLogger(__name__)

# SQS counts each 64 KiB of payload as one request and caps a message at 256 KiB.
SQS_MESSAGE_LIMIT = 256 * 1024


@functools.lru_cache(maxsize=1024)
def _filter(text: str) -> Filter:
    return parse_filter(text)


def wants(sub: SubscriptionRecord, entry: LogEntry, attributes: dict[str, str] | None = None) -> bool:
    """Whether ``sub`` should receive messages of this publish request (attributes: per message)."""
    if not sub.attached or ids.publish_ms(entry.request_id) < int(sub.created * 1000):
        return False
    if attributes is not None and sub.spec.filter:
        return _filter(sub.spec.filter).matches(attributes)
    return True


def to_outgoing(sub: SubscriptionRecord, entry: LogEntry, msg: payload.StoredMessage, offset: int,
                inline_max: int) -> Outgoing:
    env = envelope.Envelope(msg.message_id, entry.publish_time, msg.attributes, msg.ordering_key)
    body = None
    if len(msg.data) <= inline_max:
        body = envelope.encode(envelope.Envelope(**{**env.__dict__, "data": msg.data}))
        if len(body.encode()) > SQS_MESSAGE_LIMIT:
            body = None
    if body is None:
        body = envelope.encode(envelope.Envelope(**{**env.__dict__, "s3_key": entry.key, "offset": offset,
                                                    "length": len(msg.data)}))
    if sub.spec.enable_message_ordering:
        return Outgoing(body, group_id=msg.ordering_key or msg.message_id, dedup_id=msg.message_id)
    return Outgoing(body)


class FanOut:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def deliver(self, entry: LogEntry, subs: list[SubscriptionRecord]) -> int:
        """Enqueue one publish request's messages for the given subscriptions; returns messages sent."""
        targets = [s for s in subs if wants(s, entry)]
        if not targets:
            return 0
        blob = self.ctx.log.read_object(entry.key)
        if blob is None:
            log.error("raw object %s is missing; its messages cannot be fanned out", entry.key)
            return 0
        header, messages = payload.decode(blob)
        sent = 0
        for sub in targets:
            out = [
                to_outgoing(sub, entry, m, e.offset, self.ctx.config.inline_max_bytes)
                for m, e in zip(messages, header.entries)
                if wants(sub, entry, m.attributes)
            ]
            failed = self.ctx.queues.send(sub.queue_url, out) if out else []
            if failed:
                raise Unavailable(f"{len(failed)} of {len(out)} messages were not enqueued for {sub.name}")
            sent += len(out)
        return sent

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """The stream handler: Lambda event in, partial batch failure report out."""
        cache: dict[str, list[SubscriptionRecord]] = {}

        def record_handler(record: DynamoDBRecord) -> None:
            if record.event_name is None or record.event_name.name != "INSERT":
                return
            image = record.raw_event["dynamodb"]["NewImage"]
            entry = LogEntry.from_item(image)
            if entry.topic not in cache:
                cache[entry.topic], _ = self.ctx.resources.topic_subscriptions(entry.topic)
            self.deliver(entry, cache[entry.topic])

        processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                             context=context))
