"""The local push pump scales a subscription's pollers with its backlog, as Lambda's SQS event source mapping does
(up to its maximum concurrency), and back down to one poller when the queue is empty. No AWS: fakes only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib.config import Config
from chalicelib.local.push_pump import Poller
from tests.unit.test_push_flow import Store, record

WAIT = 10.0  # seconds: the most a test waits for another thread


def until(condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` holds within WAIT seconds (it depends on the pollers' threads)."""
    tick = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if condition():
            return True
        tick.wait(0.01)
    return condition()


class Backlog:
    """A queue of ``batches`` full batches; the handler holds each batch until ``release`` is set."""

    def __init__(self, batches: int, batch_size: int) -> None:
        self.left, self.batch_size = batches, batch_size
        self.lock = threading.Lock()
        self.holding = 0
        self.most_held = 0
        self.enough = threading.Event()
        self.release = threading.Event()
        self.handled = 0
        self.target = 0

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        with self.lock:
            if self.left == 0:
                return {"Messages": []}
            self.left -= 1
            n = self.left
        return {"Messages": [{"MessageId": f"m{n}-{i}", "ReceiptHandle": f"r{n}-{i}", "Body": "{}"}
                             for i in range(self.batch_size)]}

    def handler(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        with self.lock:
            self.holding += 1
            self.most_held = max(self.most_held, self.holding)
            if self.holding >= self.target:
                self.enough.set()
        self.release.wait(WAIT)
        with self.lock:
            self.holding -= 1
            self.handled += len(event["Records"])
        return {"batchItemFailures": []}


@dataclass
class Pump:
    sqs: Backlog
    concurrency: int
    batch_size: int = 10
    part: str = ""
    push: Store = field(default_factory=Store)
    config: Config = field(default_factory=Config)
    stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def handler(self) -> Any:
        return self.sqs.handler

    def clock(self) -> float:
        return 1_700_000_000.0


def test_a_backlog_is_delivered_by_up_to_the_pumps_concurrency_at_once() -> None:
    backlog = Backlog(batches=12, batch_size=10)
    backlog.target = 3
    pump = Pump(backlog, concurrency=3)
    poller = Poller(pump, record())
    poller.thread.start()
    try:
        assert backlog.enough.wait(WAIT), "three batches never were in flight at once"
        backlog.release.set()  # the rest of the backlog drains
        assert until(lambda: backlog.handled == 120)
        assert backlog.most_held == 3  # never more than the concurrency
    finally:
        poller.stop.set()
        backlog.release.set()
        poller.thread.join(WAIT)
    for extra in poller._extra:  # an empty queue ends the extra pollers
        extra.join(WAIT)
        assert not extra.is_alive()


def test_a_pump_of_concurrency_one_never_delivers_two_batches_at_once() -> None:
    backlog = Backlog(batches=5, batch_size=10)
    backlog.target = 2
    backlog.release.set()
    poller = Poller(Pump(backlog, concurrency=1), record())
    poller.thread.start()
    try:
        assert until(lambda: backlog.handled == 50)
        assert backlog.most_held == 1 and poller._extra == []
    finally:
        poller.stop.set()
        poller.thread.join(WAIT)
