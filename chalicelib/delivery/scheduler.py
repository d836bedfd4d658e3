"""The push scheduler: POSTs a batch's lanes within the throttle's concurrency window and delay.

One message per lane is in flight at a time. While the throttle asks for a delay, the scheduler
waits it out (``sleep``) when nothing is in flight and the wait ends before the batch's deadline;
otherwise the rest is *deferred*: handed back with the remaining delay as visibility timeout. A
lane's first failure hands back the rest of that lane (ordering keys keep their order). Throttle
time is the wall clock (the state is shared by all handlers); deadlines use ``monotonic`` time.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from chalicelib.core.queueing.backoff import PushThrottle
from chalicelib.core.queueing.retry import nack_delay
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.delivery import Delivery

ACK_CODES = frozenset({102, 200, 201, 202, 204})

Clock = Callable[[], float]


@dataclass(frozen=True)
class Outcome:
    acked: bool
    visibility: int = 0  # for failures: seconds until the message may be delivered again


ACKED = Outcome(True)


@dataclass
class Batch:
    rec: SubscriptionRecord
    throttle: PushThrottle
    deliveries: list[Delivery]
    started: float  # monotonic
    deadline: float  # monotonic time after which the batch must not wait any more
    timeout: float  # every push ends by started + timeout
    results: dict[str, Outcome] = field(default_factory=dict)
    counted: int = 0  # outcomes recorded in the throttle
    pushed: set[str] = field(default_factory=set)  # deliveries POSTed in this batch (delivery attempts)
    chunks: dict[str, list[Delivery]] = field(default_factory=dict)  # AMS maxMessages > 1 (delivery/ams_batches.py)


def whole_seconds(value: float) -> int:
    """A visibility timeout: whole seconds, 0..12 h."""
    return max(0, min(43_200, math.ceil(value)))


def failure_delay(rec: SubscriptionRecord, d: Delivery, throttle: PushThrottle) -> int:
    """The retry policy's backoff when the subscription has one, else the throttle's pause."""
    if rec.spec.retry_policy is not None:
        return nack_delay(rec, d.attempt)
    return whole_seconds(throttle.pause())


Send = Callable[[Batch, Delivery], "int | None"]
Flying = dict["cf.Future[int | None]", tuple[str, Delivery]]


class Scheduler:
    def __init__(self, pool: cf.Executor, send: Send, clock: Clock, monotonic: Clock,
                 sleep: Callable[[float], None]) -> None:
        self.pool = pool
        self.send = send
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep

    def run(self, batch: Batch, lanes: dict[str, deque[Delivery]]) -> None:
        """Push the lanes' messages; every one gets an outcome in ``batch.results``."""
        throttle = batch.throttle
        flying: Flying = {}
        while True:
            busy = {group for group, _ in flying.values()}
            ready = [g for g, lane in lanes.items() if lane and g not in busy]
            if not ready and not flying:
                return
            timeout: float | None = None
            if ready and len(flying) < throttle.max_outstanding(self.clock()):
                wait = throttle.delay(self.clock())
                if wait <= 0:
                    self._start(batch, lanes, ready[0], flying)
                    continue
                if not flying:
                    if self.monotonic() + wait > batch.deadline:
                        _defer(batch, lanes, wait)
                        return
                    self.sleep(wait)
                    continue
                timeout = wait
            done, _ = cf.wait(flying, timeout=timeout, return_when=cf.FIRST_COMPLETED)
            for future in done:
                self._finish(batch, lanes, flying.pop(future), future.result())

    def _start(self, batch: Batch, lanes: dict[str, deque[Delivery]], group: str, flying: Flying) -> None:
        d = lanes[group].popleft()
        flying[self.pool.submit(self.send, batch, d)] = (group, d)
        batch.pushed.add(d.key)

    def _finish(self, batch: Batch, lanes: dict[str, deque[Delivery]], pushed: tuple[str, Delivery],
                status: int | None) -> None:
        group, d = pushed
        acked = status in ACK_CODES
        batch.throttle.record(acked, self.clock())
        batch.counted += 1
        if acked:
            batch.results[d.key] = ACKED
            return
        batch.results[d.key] = Outcome(False, failure_delay(batch.rec, d, batch.throttle))
        if d.group != d.key:  # ordered: the rest of this key waits for the retry
            for rest in lanes.pop(group, deque()):
                batch.results[rest.key] = Outcome(False, 0)


def _defer(batch: Batch, lanes: dict[str, deque[Delivery]], wait: float) -> None:
    """Hand the rest back: in the queue again once the throttle's pause is over."""
    for lane in lanes.values():
        for d in lane:
            batch.results[d.key] = Outcome(False, max(1, whole_seconds(wait)))
