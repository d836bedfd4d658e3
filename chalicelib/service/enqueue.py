"""Enqueue one publish request's messages into the queues of the subscriptions that want them.

Used by publish (direct fan-out, the normal path) and by the stream's fan-out handler (for requests
publish could not fan out itself). Small bodies are copied inline into the queue message; large ones
travel as an S3 pointer and are read with a range GET when delivered. Whether a message fits is decided
by the size SQS counts for its whole queue body (attributes, ordering key and escapes included; see
core/queueing/sqs_limits.py), not by its data alone. Every SendMessageBatch of every subscription runs
concurrently. A message SQS refuses as invalid (never expected: bodies are escaped and ids made valid)
is logged and counted in the ``FanOutMessagesRefused`` metric instead of stalling every later request.
A pull subscription gets the request's messages in packs (core/queueing/packs.py): several envelopes
in one queue message, up to 64 KiB, when a request brings it more than ten messages; when the request has an
S3 object and METRO_PACK_POINTERS is on, the packed envelopes point into it instead of carrying the bodies.
"""

from __future__ import annotations

import dataclasses
import functools
import logging

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from chalicelib.core import ids, live, names, payload
from chalicelib.core.queueing import envelope, packs, sqs_batches, sqs_limits
from chalicelib.core.queueing.filters import Filter, parse_filter
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.store.queues import Outgoing, SendResult

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


def queue_message(rec: SubscriptionRecord, env: envelope.Envelope, again: bool = False) -> Outgoing:
    """A queue message of ``rec`` carrying ``env`` as it is; ``again``: a message sent back to the queue it came
    from (a FIFO queue would take a second send with the first one's deduplication id for a duplicate)."""
    body = envelope.encode(env)
    if not rec.spec.enable_message_ordering:
        return Outgoing(body)
    dedup = f"{env.message_id}#{env.prior}" if again else env.message_id
    return Outgoing(body, group_id=sqs_limits.group_id(env.ordering_key, env.message_id),
                    dedup_id=sqs_limits.safe_id(dedup))


def in_packs(out: list[Outgoing], max_members: int) -> tuple[list[Outgoing], list[list[int]]]:
    """Queue bodies joined into packs; returns the queue messages and which of ``out`` each one carries. For a FIFO
    queue a pack holds one message group's (ordering key's) messages, in their order."""
    sizes = sqs_batches.body_sizes(out)
    by_group: dict[str, list[int]] = {}
    for i, o in enumerate(out):
        by_group.setdefault(o.group_id, []).append(i)
    plan = [[idx[j] for j in g]
            for idx in by_group.values() for g in packs.groups([sizes[i] for i in idx], max_members)]
    return [out[g[0]] if len(g) == 1 else _pack(out, g) for g in plan], plan


def _pack(out: list[Outgoing], members: list[int]) -> Outgoing:
    first = out[members[0]]
    body = "[" + ",".join(out[i].body for i in members) + "]"
    if not first.group_id:
        return Outgoing(body)
    return Outgoing(body, group_id=first.group_id, dedup_id=sqs_limits.safe_id(f"{first.dedup_id}+{len(members)}"))


@dataclasses.dataclass
class _Job:
    sub: SubscriptionRecord
    messages: list[Outgoing]  # one per Pub/Sub message
    queued: list[Outgoing]  # what goes to the queue: the messages, or packs of them
    carried: list[list[int]]  # per queued message, the indexes of the messages it carries


def enqueue(ctx: Context, entry: LogEntry, header: payload.Header, messages: list[payload.StoredMessage],
            subs: list[SubscriptionRecord]) -> tuple[int, list[str]]:
    """Send the request's messages to every subscription that wants them.

    Returns (messages sent, names of the subscriptions where some message was not enqueued).
    """
    jobs: list[_Job] = []
    for sub in subs:
        if not wants(sub, entry):
            continue
        wanted = [(m, e.offset) for m, e in zip(messages, header.entries) if wants(sub, entry, m.attributes)]
        if not wanted:
            continue
        packed = ctx.config.pack_max_messages > 1 and packs.worth_packing(sub, len(wanted))
        inline_max = 0 if packed and _pointers(ctx, entry) else ctx.config.inline_max_bytes
        out = [to_outgoing(sub, entry, m, offset, inline_max) for m, offset in wanted]
        if packed:
            jobs.append(_Job(sub, out, *in_packs(out, ctx.config.pack_max_messages)))
        else:
            jobs.append(_Job(sub, out, out, [[i] for i in range(len(out))]))
    results = ctx.queues.send_all([(job.sub.queue_url, job.queued) for job in jobs])
    _unpack_refused(ctx, jobs, results)
    sent, failed = 0, []
    for job, result in zip(jobs, results):
        if result.dropped:
            _count_refused(entry, job.sub.name, len(result.dropped))
        sent += len(job.messages) - len(result.failed) - len(result.dropped)
        if result.failed:
            failed.append(job.sub.name)
        if packs.packable(job.sub):  # how many messages its queue messages carry (service/live_usage.py)
            count_queued(ctx, job.sub, len(job.messages), len(job.queued))
    return sent, failed


def _pointers(ctx: Context, entry: LogEntry) -> bool:
    """Whether packs of this request carry pointers into its S3 object rather than the bodies: SQS bills each
    64 KiB of a pack when sent and again when received, an S3 range GET is one request per pull
    (docs/decisions/sqs-packs.md). A request logged in its item has no object to point into."""
    return ctx.config.pack_pointers and not entry.logged_inline


def count_queued(ctx: Context, sub: SubscriptionRecord, messages: int, queued: int) -> None:
    """Count ``messages`` sent to a packable subscription in ``queued`` queue messages."""
    ctx.counters.add(names.parse(sub.name, "subscriptions"), {live.PACKED: messages, live.PACKS: queued}, ctx.clock())


def _unpack_refused(ctx: Context, jobs: list[_Job], results: list[SendResult]) -> None:
    """A pack SQS refused is sent again one message per queue message, so that only the message SQS refuses
    is lost to it; ``results`` then count messages, not queue messages."""
    for job, result in zip(jobs, results):
        if job.queued is job.messages:
            continue
        alone = [i for q in result.dropped if len(job.carried[q]) > 1 for i in job.carried[q]]
        refused = [job.carried[q][0] for q in result.dropped if len(job.carried[q]) == 1]
        retried = ctx.queues.send(job.sub.queue_url, [job.messages[i] for i in alone]) if alone else SendResult()
        result.failed[:] = [i for q in result.failed for i in job.carried[q]] + [alone[i] for i in retried.failed]
        result.dropped[:] = refused + [alone[i] for i in retried.dropped]


def _count_refused(entry: LogEntry, subscription: str, count: int) -> None:
    log.error("%d message(s) of request %s were refused by SQS for %s and cannot be delivered",
              count, entry.request_id, subscription)
    with single_metric(name="FanOutMessagesRefused", unit=MetricUnit.Count, value=count,
                       namespace=METRIC_NAMESPACE) as metric:
        metric.add_dimension(name="Subscription", value=subscription)
