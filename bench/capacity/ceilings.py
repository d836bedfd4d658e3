"""Closed-form ceilings: what one quota allows Metro, from the quotas and the per-operation arithmetic.

These are the figures docs/deploy.md states beside the quotas; the simulation (simulate.py) meets them when a
day's traffic reaches them, and tests/unit/test_capacity_*.py check both agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.capacity import usage as ops
from bench.capacity.profile import Handlers
from bench.capacity.quotas import DEFAULT_QUOTAS, Quotas
from bench.pricing import PRICES

MONTH_S = 30 * 86_400


@dataclass(frozen=True)
class WideTopic:
    subscriptions: int
    sends_per_request: int  # SendMessageBatch calls per publish request
    fanned_by: str  # "publish", "stream" (the lane sends them all) or "slices"
    ms_per_request: float  # the sends' time in the handler that makes them (calls in rounds of send_threads)
    lane_requests_s: float  # publish requests/s the topic's stream lane fans out or hands out (inf: publish does it)
    slices: int = 0  # per publish request
    slice_ms: float = 0.0  # one slice's time
    executions_per_request_s: float = 0.0  # concurrent slice executions each publish request/s of the topic holds
    concurrency_requests_s: float = math.inf  # publish requests/s the account's whole Lambda concurrency allows them
    query_read_units: float = 0.0  # publish's consistent Query of the topic's subscription items, per request
    # publish requests/s one partition's read units allow that Query (the topic's subscriptions share a key)
    query_requests_s: float = math.inf


def topic_log_requests_s(per_request: int = 10, message_bytes: int = 1024, ordered: bool = False,
                         h: Handlers | None = None, q: Quotas = DEFAULT_QUOTAS) -> float:
    """Publish requests/s one topic's log partitions take: an item each, of ``ceil(bytes / 1 KiB)`` write units,
    spread over the unordered keys (requests with ordering keys all on the topic's own)."""
    h = h or Handlers()
    inline = ops.logged_inline(per_request, message_bytes, log_max=h.log_inline_max_bytes,
                               inline_max=h.inline_max_bytes)
    item = ops.log_item_bytes(per_request, message_bytes, inline)
    return ops.log_partitions(ordered) * q.ddb_partition_wcu / ops.write_units(item)


def topic_publish_requests_s(per_request: int = 10, message_bytes: int = 1024, ordered: bool = False,
                             h: Handlers | None = None, q: Quotas = DEFAULT_QUOTAS) -> float:
    """One topic's publish requests/s: its log partitions, and its S3 prefix for the requests with an object."""
    h = h or Handlers()
    log = topic_log_requests_s(per_request, message_bytes, ordered, h, q)
    if ops.logged_inline(per_request, message_bytes, log_max=h.log_inline_max_bytes, inline_max=h.inline_max_bytes):
        return log
    return min(log, float(q.s3_put_per_prefix))


def topic_messages_s(per_request: int, message_bytes: int = 1024, ordered: bool = False, h: Handlers | None = None,
                     q: Quotas = DEFAULT_QUOTAS) -> float:
    return topic_publish_requests_s(per_request, message_bytes, ordered, h, q) * per_request


def max_long_pulls(other_concurrency: float = 0.0, q: Quotas = DEFAULT_QUOTAS) -> float:
    """Pulls that may wait at once: the account's concurrency less what everything else holds."""
    return max(0.0, q.lambda_concurrency - other_concurrency)


def wide_topic(subscriptions: int, per_request: int = 10, message_bytes: int = 1024, h: Handlers | None = None,
               q: Quotas = DEFAULT_QUOTAS) -> WideTopic:
    h = h or Handlers()
    calls, _ = ops.send_calls(per_request, ops.envelope_bytes(message_bytes, h.inline_max_bytes), q)
    sends = calls * subscriptions
    ms = math.ceil(sends / h.send_threads) * ops.SQS_MS
    read = ops.publish(per_request, message_bytes, subscriptions, direct_max=h.direct_fanout_max_subscriptions,
                       q=q).usage.ddb_ru
    per_partition = q.ddb_partition_rcu / read
    if subscriptions <= h.direct_fanout_max_subscriptions:
        return WideTopic(subscriptions, sends, "publish", ms, math.inf, query_read_units=read,
                         query_requests_s=per_partition)
    if ops.slice_count(subscriptions, h.fanout_slice_subscriptions):
        cut = ops.fanout_sliced(per_request, message_bytes, subscriptions, h.fanout_slice_subscriptions,
                                threads=h.send_threads, inline_max=h.inline_max_bytes, q=q)
        held = cut.count * cut.slices.ms / 1000
        return WideTopic(subscriptions, sends, "slices", ms, 1000 / cut.lane.ms, cut.count, cut.slices.ms, held,
                         q.lambda_concurrency / held, read, per_partition)
    record = ops.fanout_record(per_request, message_bytes, subscriptions, threads=h.send_threads,
                               inline_max=h.inline_max_bytes, q=q)
    return WideTopic(subscriptions, sends, "stream", ms, 1000 / record.ms, query_read_units=read,
                     query_requests_s=per_partition)


def s3_put_usd_per_month(messages_s: float, per_request: int) -> float:
    """S3 PutObject dollars a month (30 days) at ``messages_s`` in publish requests of ``per_request``."""
    return messages_s / per_request * MONTH_S * PRICES["s3_put_class"].each


def push_messages_s(h: Handlers | None = None) -> float:
    """One push subscription's most messages/s: its mapping's concurrency x batch / (invocation + receive)."""
    h = h or Handlers()
    cycle = (ops.push_batch(h.push_endpoint_ms).ms + ops.SQS_MS) / 1000
    return h.push_max_concurrency * h.push_batch_size / cycle


def pull_loop_messages_s(max_messages: int = 100, message_bytes: int = 1024, h: Handlers | None = None) -> float:
    """One pull loop's most messages/s: full pulls, each followed by its acknowledge and the client's gap."""
    h = h or Handlers()
    m = ops.max_pull(message_bytes, max_messages)
    cycle = (ops.pull(m, message_bytes, max_messages).ms + ops.acknowledge(m).ms) / 1000 + h.client_gap_s
    return m / cycle


def api_messages_s(per_request: int, messages_per_pull: float, subscriptions: int = 1,
                   q: Quotas = DEFAULT_QUOTAS) -> float:
    """Messages/s API Gateway's throttle allows: a publish per ``per_request`` messages, a pull and an acknowledge
    per ``messages_per_pull`` per subscription."""
    return q.apigw_rps / (1 / per_request + 2 * subscriptions / messages_per_pull)
