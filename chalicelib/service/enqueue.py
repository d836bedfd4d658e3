"""Enqueue one publish request's messages into the queues of the subscriptions that want them.

Used by publish (direct fan-out, the normal path) and by the stream's fan-out handler (for requests
publish could not fan out itself). Small bodies are copied inline into the queue message; large ones
travel as an S3 pointer and are read with a range GET when delivered. Whether a message fits is decided
by the size SQS counts for its whole queue body (attributes, ordering key and escapes included; see
core/queueing/sqs_limits.py), not by its data alone. Every SendMessageBatch of every subscription runs
concurrently. A message SQS refuses as invalid (never expected: bodies are escaped and ids made valid)
is logged and counted in the ``FanOutMessagesRefused`` metric instead of stalling every later request.
"""

from __future__ import annotations

import functools
import logging

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from chalicelib.core import ids, payload
from chalicelib.core.queueing import envelope, sqs_limits
from chalicelib.core.queueing.filters import Filter, parse_filter
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.store.queues import Outgoing

log = logging.getLogger(__name__)
METRIC_NAMESPACE = "Metro"  # the namespace of every Metro metric


@functools.lru_cache(maxsize=1024)
def _filter(text: str) -> Filter:
    return parse_filter(text)


def wants(sub: SubscriptionRecord, entry: LogEntry, attributes: dict[str, str] | None = None) -> bool:
    """Whether ``sub`` should receive messages of this publish request (attributes: per message)."""
    if not sub.attached or ids.publish_ms(entry.request_id) < int(sub.created * 1000):
        return False
    return attributes is None or matches_filter(sub, attributes)


def matches_filter(sub: SubscriptionRecord, attributes: dict[str, str]) -> bool:
    """Whether a message with these attributes passes the subscription's filter (no filter: every message)."""
    return not sub.spec.filter or _filter(sub.spec.filter).matches(attributes)


def to_outgoing(sub: SubscriptionRecord, entry: LogEntry, msg: payload.StoredMessage, offset: int,
                inline_max: int) -> Outgoing:
    """The queue message of ``msg``: inline when its escaped body fits one SQS message, else an S3 pointer."""
    body = queue_body(entry, msg, offset, inline_max)
    if sub.spec.enable_message_ordering:
        return Outgoing(body, group_id=sqs_limits.group_id(msg.ordering_key, msg.message_id),
                        dedup_id=sqs_limits.safe_id(msg.message_id))
    return Outgoing(body)


def queue_body(entry: LogEntry, msg: payload.StoredMessage, offset: int, inline_max: int) -> str:
    """The envelope of ``msg``; SQS's batch bound is the bound of an inline body too."""
    if len(msg.data) <= inline_max:
        body = envelope.encode(envelope.Envelope(msg.message_id, entry.publish_time, msg.attributes,
                                                 msg.ordering_key, data=msg.data))
        if sqs_limits.body_bytes(body) <= sqs_limits.BATCH_BYTES:
            return body
    return envelope.encode(envelope.Envelope(msg.message_id, entry.publish_time, msg.attributes, msg.ordering_key,
                                             s3_key=entry.key, offset=offset, length=len(msg.data)))


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
    results = ctx.queues.send_all(jobs)
    for name, result in zip(names, results):
        if result.dropped:
            _count_refused(entry, name, len(result.dropped))
    sent = sum(len(out) - len(r.failed) - len(r.dropped) for (_, out), r in zip(jobs, results))
    return sent, [names[i] for i, r in enumerate(results) if r.failed]


def _count_refused(entry: LogEntry, subscription: str, count: int) -> None:
    log.error("%d message(s) of request %s were refused by SQS for %s and cannot be delivered",
              count, entry.request_id, subscription)
    with single_metric(name="FanOutMessagesRefused", unit=MetricUnit.Count, value=count,
                       namespace=METRIC_NAMESPACE) as metric:
        metric.add_dimension(name="Subscription", value=subscription)
