"""Enqueue one publish request's messages into the queues of the subscriptions that want them.

Used by publish (direct fan-out, the normal path) and by the stream's fan-out handler (for requests
publish could not fan out itself). Small bodies are copied inline into the queue message; large ones
travel as an S3 pointer and are read with a range GET when delivered. Every SendMessageBatch of every
subscription runs concurrently.
"""

from __future__ import annotations

import functools

from chalicelib.core import envelope, ids, payload
from chalicelib.core.filters import Filter, parse_filter
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.store.queues import Outgoing

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


def enqueue(ctx: Context, entry: LogEntry, header: payload.Header, messages: list[payload.StoredMessage],
            subs: list[SubscriptionRecord]) -> tuple[int, list[str]]:
    """Send the request's messages to every subscription that wants them.

    Returns (messages sent, names of the subscriptions where some message was not enqueued).
    """
    jobs: list[tuple[str, list[Outgoing]]] = []
    names: list[str] = []
    for sub in subs:
        if not wants(sub, entry):
            continue
        out = [to_outgoing(sub, entry, m, e.offset, ctx.config.inline_max_bytes)
               for m, e in zip(messages, header.entries) if wants(sub, entry, m.attributes)]
        if out:
            jobs.append((sub.queue_url, out))
            names.append(sub.name)
    failed = ctx.queues.send_all(jobs)
    sent = sum(len(out) for _, out in jobs)
    return sent, [names[i] for i, bad in enumerate(failed) if bad]
