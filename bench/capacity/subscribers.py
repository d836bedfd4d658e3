"""What one subscription's consumers ask of AWS each second, at a given message rate (mean-field, steady state).

Pull: ``pullers`` loops, each with one pull outstanding. A loop whose pull finds messages returns at once with what
accumulated since the last pull of any loop, so a pull carries ``m = rate x cycle / loops`` messages (at least 1, at
most maxMessages or what fits the 4 MB response), where a cycle is the pull, its acknowledge and the client's own
time. Loops that find nothing wait in a long poll, each holding a Lambda (and billing its time) until a message
comes or the wait ends empty: with probability ``exp(-rate x wait / loops)``, arrivals shared evenly.

Push: the subscription's event source mapping invokes the push function with up to ``push_max_concurrency``
batches at once, each of up to ``push_batch_size`` messages; with no batching window a batch holds what arrived
during one poller's cycle. Idle pollers' long polls (20 s) are billed SQS requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.capacity import usage as ops
from bench.capacity.profile import Handlers, TopicClass
from bench.capacity.quotas import Quotas
from bench.capacity.usage import Operation, Usage
from bench.pricing import LAMBDA_MEMORY_GB


@dataclass
class Consumers:
    """What a topic's subscribers do, per second."""

    api_rps: float = 0.0  # pull and acknowledge requests
    api_concurrency: float = 0.0  # API function executions they hold (waiting pulls included)
    push_concurrency: float = 0.0
    push_invocations: float = 0.0
    long_pulls: float = 0.0  # executions held by pulls, waiting or collecting
    usage_s: Usage = field(default_factory=Usage)
    shortfall: float = 0.0  # messages/s the consumers cannot take (not an AWS quota)


def _cycle(m: float, c: TopicClass, h: Handlers) -> tuple[Operation, Operation, float]:
    k = ops.messages_per_queue_message(c.per_request, c.message_bytes, h.inline_max_bytes)  # packs
    pull = ops.pull(m, c.message_bytes, c.subscriptions.max_messages, per_request=c.per_request,
                    inline_max=h.inline_max_bytes, per_queue_message=k)
    ack = ops.acknowledge(m, k)
    return pull, ack, (pull.ms + ack.ms) / 1000 + h.client_gap_s


def pull_subscription(rate: float, c: TopicClass, h: Handlers) -> Consumers:
    """One pull subscription of a topic of class ``c`` taking ``rate`` messages/s."""
    out = Consumers()
    loops, wait = c.subscriptions.pullers, h.pull_wait_s
    if loops <= 0:
        return out  # nobody pulls: the queue keeps the messages
    most = float(ops.max_pull(c.message_bytes, c.subscriptions.max_messages))
    m = most
    for _ in range(3):  # how full a pull is depends on the cycle, which depends a little on how full it is
        m = min(most, max(1.0, rate * _cycle(m, c, h)[2] / loops))
    pull, ack, cycle = _cycle(m, c, h)
    taken = min(rate, loops * most / _cycle(most, c, h)[2])
    out.shortfall = rate - taken
    pulls = taken / m
    waiting = max(0.0, loops - pulls * cycle)
    empty = waiting * math.exp(-rate * wait / loops) / wait
    out.api_rps = 2 * pulls + empty
    out.long_pulls = waiting + pulls * pull.ms / 1000
    out.api_concurrency = waiting + pulls * (pull.ms + ack.ms) / 1000
    empty_pull = ops.pull(0, c.message_bytes, c.subscriptions.max_messages, inline_max=h.inline_max_bytes)
    out.usage_s = (pull.usage + ack.usage).scaled(pulls) + empty_pull.usage.scaled(empty)
    out.usage_s.gb_s += waiting * LAMBDA_MEMORY_GB  # the waits themselves: billed Lambda time
    return out


def push_subscription(rate: float, push: Operation, h: Handlers, q: Quotas) -> Consumers:
    """One push subscription taking ``rate`` messages/s; ``push`` is one invocation (usage.push_batch)."""
    out = Consumers()
    pollers, batch = h.push_max_concurrency, h.push_batch_size
    cycle = (push.ms + ops.SQS_MS) / 1000
    per_batch = min(float(batch), max(1.0, rate * cycle / pollers))
    taken = min(rate, pollers * batch / cycle)
    out.shortfall = rate - taken
    invocations = taken / per_batch
    idle = pollers * math.exp(-rate * q.sqs_long_poll_max_s / pollers) / q.sqs_long_poll_max_s
    out.push_concurrency = invocations * push.ms / 1000
    out.push_invocations = invocations
    out.usage_s = push.usage.scaled(invocations) + ops.idle_receive().scaled(idle)
    return out
