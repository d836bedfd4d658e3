"""Push flow control through the real handler and pump poller, with injected time and in-memory fakes.

The endpoint answers each push in 20 ms and the backlog never runs dry; the fake clock only moves
when the endpoint works or when the pump or handler wait.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib.config import Config
from chalicelib.core import names
from chalicelib.core.queueing import envelope
from chalicelib.core.queueing.backoff import PushThrottle, ThrottleState
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.models import PushConfig, RetryPolicy, Subscription
from chalicelib.delivery.push import CACHE_TTL, PushDelivery
from chalicelib.local.push_pump import Poller, lambda_record
from chalicelib.service.context import Clock, Context
from chalicelib.store.leases import SkipStore
from chalicelib.store.push_state import PushStore
from chalicelib.store.queues import QueueStore
from chalicelib.store.resources import ResourceStore

T0 = 1_800_000_000.0
NAME = "projects/proj1/subscriptions/sub-1"
ANSWER = 0.02  # seconds the endpoint takes per push
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/metro-abc-1"


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class Store(PushStore):
    """PushStore in memory."""

    def __init__(self) -> None:
        self.state = ThrottleState()
        self.saves = 0

    def load_throttle(self, sub: str) -> ThrottleState:
        return ThrottleState.from_dict(self.state.to_dict())

    def save_throttle(self, sub: str, state: ThrottleState) -> None:
        self.state = ThrottleState.from_dict(state.to_dict())
        self.saves += 1

    def index_get(self, key: str) -> str:
        return NAME


class Skips(SkipStore):
    """SkipStore in memory (receives that were not deliveries)."""

    def __init__(self) -> None:
        self.skips: dict[str, int] = {}

    def get(self, sub: str, gen: int, mids: list[str]) -> dict[str, int]:
        return {m: self.skips[m] for m in mids if m in self.skips}

    def put(self, sub: str, gen: int, skips: dict[str, int], expires: int) -> None:
        self.skips.update(skips)


class Queue(QueueStore):
    """An endless backlog (``receive_message`` is the pump's SQS call); records acks and visibility changes."""

    def __init__(self) -> None:
        self.sent = 0
        self.deleted: list[str] = []
        self.delays: list[int] = []

    def receive_message(self, MaxNumberOfMessages: int, **_: Any) -> dict[str, Any]:
        out = []
        for _i in range(MaxNumberOfMessages):
            self.sent += 1
            body = envelope.encode(envelope.Envelope(f"m{self.sent}", "2026-01-01T00:00:00.000000Z", data=b"x"))
            out.append({"MessageId": f"q{self.sent}", "ReceiptHandle": f"r{self.sent}", "Body": body,
                        "Attributes": {"ApproximateReceiveCount": "1"}})
        return {"Messages": out}

    def delete_batch(self, url: str, receipts: Sequence[str]) -> list[int]:
        self.deleted += receipts
        return []

    def change_visibility_batch(self, url: str, changes: Sequence[tuple[str, int]]) -> list[int]:
        self.delays += [d for _, d in changes]
        return []


class Resources(ResourceStore):
    """ResourceStore in memory: one subscription; counts its reads and the activity marks."""

    def __init__(self, rec: SubscriptionRecord) -> None:
        self.rec = rec
        self.reads = 0
        self.active: list[float] = []

    def get_subscription(self, name: names.Name) -> SubscriptionRecord:
        self.reads += 1
        return self.rec

    def mark_active(self, name: names.Name, now: float) -> None:
        self.active.append(now)


def record(spec: Subscription | None = None) -> SubscriptionRecord:
    spec = spec or Subscription(name=NAME, topic="projects/proj1/topics/topic-1",
                                push_config=PushConfig(push_endpoint="http://127.0.0.1:1/h"))
    return SubscriptionRecord(spec, T0 - 100, URL, 1)


@functools.cache
def base_context() -> Context:
    """Real configuration and stores (never called here: the rig replaces every one it uses)."""
    return Context.from_config(Config())


@dataclass
class Pump:
    """What the pump's poller reads from its pump."""

    push: Store
    sqs: Queue
    handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    config: Config
    clock: Clock
    batch_size: int = 10
    concurrency: int = 1
    part: str = ""
    stopped: threading.Event = field(default_factory=threading.Event)


class Rig:
    """The pump's poller and the handler, wired to fakes."""

    def __init__(self, answer: Callable[[int], int], rec: SubscriptionRecord | None = None) -> None:
        self.clock = FakeClock()
        self.store = Store()
        self.queue = Queue()
        self.skips = Skips()
        self.resources = Resources(rec or record())
        self.pushes: list[float] = []
        self.answer = answer
        ctx = dataclasses.replace(base_context(), clock=self.clock, queues=self.queue, push=self.store,
                                  skips=self.skips, resources=self.resources)
        self.delivery = PushDelivery(ctx, post=self.post, sleep=self.clock.advance, monotonic=self.clock, workers=1)
        pump = Pump(self.store, self.queue, self.delivery.handle, ctx.config, self.clock)
        self.poller = Poller(pump, self.resources.rec)

    @property
    def active(self) -> list[float]:
        return self.resources.active

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        self.pushes.append(self.clock())
        status = self.answer(len(self.pushes) - 1)
        self.clock.advance(ANSWER)
        return status

    def run(self, seconds: float) -> list[float]:
        """Let the pump deliver for ``seconds``; returns the intervals between pushes in that time."""
        start, first = self.clock(), len(self.pushes)
        while self.clock() < start + seconds:
            wait = PushThrottle(self.store.load_throttle(NAME)).delay(self.clock())
            if wait > 0:  # the pump sleeps through the throttle's delay before it receives
                self.clock.advance(wait)
                continue
            before = len(self.pushes)
            self.poller.poll_once()
            if len(self.pushes) == before:  # nothing pushed (a deferral): time passes anyway
                self.clock.advance(0.1)
        times = self.pushes[max(0, first - 1):]
        return [b - a for a, b in itertools.pairwise(times)]

    def event(self, count: int) -> dict[str, Any]:
        """A Lambda SQS event of ``count`` fresh messages of the subscription's queue."""
        return {"Records": [lambda_record(m, "arn:aws:sqs:us-east-1:1:metro-abc-1", "us-east-1")
                            for m in self.queue.receive_message(MaxNumberOfMessages=count)["Messages"]]}


def every_fifth_nacked(i: int) -> int:
    return 500 if i % 5 == 4 else 200


def test_healthy_endpoint_is_pushed_back_to_back_in_batches() -> None:
    rig = Rig(lambda i: 204)
    intervals = rig.run(20.0)
    assert set(round(i, 6) for i in intervals) == {ANSWER}
    assert rig.queue.delays == [] and len(rig.queue.deleted) == len(rig.pushes)
    assert rig.store.saves <= 2  # the state is written only until the window is full
    assert len(rig.active) == 1  # subscriber activity (expirationPolicy), at most once an hour


def test_one_nack_in_five_paces_pushes_about_500_ms_apart() -> None:
    rig = Rig(every_fifth_nacked)
    intervals = rig.run(120.0)
    steady = intervals[len(intervals) // 2 :]
    assert 0.4 <= sum(steady) / len(steady) <= 0.65, sum(steady) / len(steady)
    assert all(i <= 1.0 for i in steady)


def test_nacking_everything_pushes_once_every_30_to_60_s_then_recovers() -> None:
    failing = True
    rig = Rig(lambda i: 503 if failing else 200)
    rig.run(30.0)  # some healthy history would not change the outcome
    intervals = rig.run(600.0)
    assert all(30.0 <= i <= 60.0 + ANSWER for i in intervals[-5:]), intervals[-5:]
    assert len(intervals) < 25
    failing = False
    recovered = rig.run(60.0)
    assert recovered[1] <= 1.0  # [0] is the last pause of the failing phase
    assert all(abs(i - ANSWER) < 1e-6 for i in recovered[-20:])


def test_nacks_redeliver_after_the_pause_or_the_retry_policy() -> None:
    rig = Rig(lambda i: 500)
    rig.run(5.0)
    assert rig.queue.delays and all(d >= 1 for d in rig.queue.delays)
    spec = record().spec.model_copy(update={"retry_policy": RetryPolicy(minimum_backoff="20s",
                                                                       maximum_backoff="30s")})
    rig = Rig(lambda i: 500, record(spec))
    rig.run(5.0)
    assert rig.queue.delays.count(20) == len(rig.pushes)  # the others were deferred, never pushed


def test_a_batch_received_before_a_long_pause_is_deferred_not_pushed() -> None:
    rig = Rig(lambda i: 200)
    throttle = PushThrottle()
    for i in range(10):
        throttle.record(False, T0 - 10 + i)
    rig.store.state = throttle.state
    # Lambda polls regardless of the throttle: the handler must hand the batch back, not push it.
    result = rig.delivery.handle({"Records": [
        {"messageId": f"q{i}", "receiptHandle": f"r{i}", "eventSourceARN": "arn:aws:sqs:us-east-1:1:metro-abc-1",
         "attributes": {"ApproximateReceiveCount": "1"},
         "body": json.dumps({"id": f"m{i}", "t": "2026-01-01T00:00:00Z", "d": "eA=="})} for i in range(3)]})
    assert rig.pushes == [] and len(result["batchItemFailures"]) == 3
    assert min(rig.queue.delays) >= 10


@pytest.mark.parametrize("status", [102, 200, 201, 202, 204])
def test_ack_statuses(status: int) -> None:
    rig = Rig(lambda i: status)
    rig.run(1.0)
    assert rig.queue.delays == [] and rig.queue.deleted


@pytest.mark.parametrize("status", [100, 203, 206, 301, 304, 400, 404, 409, 429, 500, 503])
def test_other_statuses_nack(status: int) -> None:
    rig = Rig(lambda i: status)
    rig.run(1.0)
    assert rig.queue.deleted == [] and rig.queue.delays


def test_pauses_grow_while_everything_is_nacked() -> None:
    rig = Rig(lambda i: 503)
    intervals = rig.run(30.0)
    pauses = [i for i in intervals if i > 0.3]  # a fresh subscription's first batch goes out back to back
    assert len(pauses) >= 3 and pauses == sorted(pauses), pauses
    assert pauses[-1] >= 2.0


def test_the_pause_falls_as_acks_return() -> None:
    nacking = True
    rig = Rig(lambda i: 500 if nacking and i % 5 == 4 else 204)
    paced = rig.run(60.0)[-20:]
    nacking = False
    rig.run(4.0)
    recovered = rig.run(3.0)[1:]  # 4-7 s after the last nack; [0] spans the switch
    assert recovered and max(recovered) < 0.85 * sorted(paced)[len(paced) // 2], (recovered, paced)


def test_a_warm_handler_trusts_its_copy_of_the_subscription_for_the_cache_ttl() -> None:
    rig = Rig(lambda i: 204)
    rig.delivery.handle(rig.event(1))
    assert rig.resources.reads == 1
    rig.clock.advance(CACHE_TTL - 0.01 - ANSWER)
    rig.delivery.handle(rig.event(1))
    assert rig.resources.reads == 1  # still cached
    rig.clock.advance(0.01)
    rig.delivery.handle(rig.event(1))
    assert rig.resources.reads == 2  # expired: read again (the same wait does see the change)
    assert len(rig.pushes) == 3
