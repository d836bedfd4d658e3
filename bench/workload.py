"""The load engine: publisher and consumer threads running concurrently, with flow control.

A *system* (Metro over HTTP, or a raw AWS baseline) supplies two factories: one builds a per-thread
publish function, the other a per-thread, per-subscription pull-and-ack function. The engine runs
them until every subscription has acknowledged every message once, measuring end-to-end throughput
(first publish to last ack) and publish-to-pull latency (the send time travels with each message).

Publishers stop sending while more than ``window`` messages are published but not yet acknowledged on
every subscription (like a client's flow control), so queues stay shallow: moto's SQS receive scans
the whole queue, which would otherwise slow down with depth and measure the emulator, not the design.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# One publish request: (request index, message count) -> Google-billable bytes of its messages.
Publish = Callable[[int, int], int]
PublishFactory = Callable[[], Publish]


@dataclass
class Pulled:
    """What one pull-and-ack cycle got."""

    ids: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # seconds, publish send -> pull received
    google_bytes: int = 0  # Google-billable bytes of the delivered messages
    bad: int = 0  # messages whose body did not have the expected size


Consume = Callable[[], Pulled]
ConsumeFactory = Callable[[str], Consume]  # subscription -> per-thread consumer


@dataclass
class Load:
    messages: int
    per_request: int
    subscriptions: list[str]
    publishers: int
    consumers_per_subscription: int
    window: int
    timeout: float
    interval: float = 0.0  # > 0: paced publishing, one request every ``interval`` seconds (latency probe)


@dataclass
class Outcome:
    elapsed: float = 0.0
    published: int = 0
    acked: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    bad_bodies: int = 0
    latencies: list[float] = field(default_factory=list)
    google_publish: list[int] = field(default_factory=list)
    google_delivery: list[int] = field(default_factory=list)
    pulls: int = 0
    empty_pulls: int = 0
    errors: list[str] = field(default_factory=list)
    complete: bool = False


class Engine:
    def __init__(self, load: Load, publish: PublishFactory, consume: ConsumeFactory) -> None:
        self.load = load
        self._publish = publish
        self._consume = consume
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._done = threading.Event()
        self._next_request = 0
        self._requests = [min(load.per_request, load.messages - i) for i in range(0, load.messages, load.per_request)]
        self._reserved = 0
        self._seen: dict[str, set[str]] = {s: set() for s in load.subscriptions}
        self.out = Outcome(acked={s: 0 for s in load.subscriptions})
        self._start = 0.0

    # -- progress ------------------------------------------------------------------------------
    def min_acked(self) -> int:
        with self._cond:
            return min(len(s) for s in self._seen.values())

    def _error(self, text: str) -> None:
        with self._cond:
            if len(self.out.errors) < 50:
                self.out.errors.append(text)

    # -- threads -------------------------------------------------------------------------------
    def _publisher(self) -> None:
        try:
            publish = self._publish()
        except Exception as exc:  # pragma: no cover - setup failure
            self._error(f"publisher setup: {exc!r}")
            return
        while not self._stop.is_set():
            with self._cond:
                if self._next_request >= len(self._requests):
                    return
                index = self._next_request  # claimed before waiting: the lock is released while waiting
                self._next_request += 1
                count = self._requests[index]
                while (self.load.window and self._reserved + count - min(len(s) for s in self._seen.values())
                       > self.load.window and not self._stop.is_set()):
                    self._cond.wait(0.05)
                self._reserved += count
            if self.load.interval:
                delay = self._start + index * self.load.interval - time.perf_counter()
                if delay > 0 and self._stop.wait(delay):
                    return
            for attempt in range(5):
                try:
                    billed = publish(index, count)
                    break
                except Exception as exc:
                    self._error(f"publish #{index} attempt {attempt}: {exc!r}")
                    time.sleep(0.2 * (attempt + 1))
            else:
                self._stop.set()
                return
            with self._cond:
                self.out.published += count
                self.out.google_publish.append(billed)

    def _consumer(self, sub: str) -> None:
        try:
            consume = self._consume(sub)
        except Exception as exc:  # pragma: no cover - setup failure
            self._error(f"consumer setup: {exc!r}")
            return
        seen = self._seen[sub]
        while not self._stop.is_set() and not self._done.is_set():
            with self._cond:
                if len(seen) >= self.load.messages:
                    return
            try:
                got = consume()
            except Exception as exc:
                self._error(f"pull {sub}: {exc!r}")
                time.sleep(0.2)
                continue
            with self._cond:
                self.out.pulls += 1
                if not got.ids:
                    self.out.empty_pulls += 1
                    continue
                before = len(seen)
                seen.update(got.ids)
                self.out.duplicates += len(got.ids) - (len(seen) - before)
                self.out.bad_bodies += got.bad
                self.out.latencies.extend(got.latencies)
                self.out.google_delivery.append(got.google_bytes)
                self._cond.notify_all()
                if all(len(s) >= self.load.messages for s in self._seen.values()) and not self._done.is_set():
                    self.out.elapsed = time.perf_counter() - self._start
                    self.out.complete = True
                    self._done.set()

    def run(self, on_progress: Callable[[int], None] | None = None,
            at_done: Callable[[], Any] | None = None) -> Outcome:
        """Run the load; ``at_done`` is called the moment the last ack landed (before threads are joined)."""
        threads = [threading.Thread(target=self._consumer, args=(sub,), daemon=True, name=f"bench-pull-{sub}-{i}")
                   for sub in self.load.subscriptions for i in range(self.load.consumers_per_subscription)]
        threads += [threading.Thread(target=self._publisher, daemon=True, name=f"bench-pub-{i}")
                    for i in range(self.load.publishers)]
        self._start = time.perf_counter()
        for t in threads:
            t.start()
        deadline = self._start + self.load.timeout
        while not self._done.wait(0.1):
            if on_progress is not None:
                on_progress(self.min_acked())
            if time.perf_counter() > deadline or (self._stop.is_set() and not self._done.is_set()):
                self._error(f"incomplete after {time.perf_counter() - self._start:.0f}s: "
                            f"published {self.out.published}, acked {self.min_acked()} (min over subscriptions)")
                self.out.elapsed = time.perf_counter() - self._start
                break
        if at_done is not None:
            at_done()
        if on_progress is not None:
            on_progress(self.min_acked())
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
            self.out.acked = {s: len(v) for s, v in self._seen.items()}
        for t in threads:
            t.join(timeout=30)
        return self.out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of ``values``; 0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]
