"""A small discrete-event queue: events at times, run in time order (ties in the order they were scheduled)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

Action = Callable[[float], None]


@dataclass(order=True)
class _Entry:
    time: float
    seq: int
    action: Action = field(compare=False)


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self.now = 0.0
        self.processed = 0

    def at(self, time: float, action: Action) -> None:
        """Run ``action(time)`` at ``time`` (not before the current time)."""
        heapq.heappush(self._heap, _Entry(max(time, self.now), next(self._seq), action))

    def after(self, delay: float, action: Action) -> None:
        self.at(self.now + delay, action)

    def run(self, until: float) -> None:
        """Run every event due before ``until``, in order; events they schedule run too."""
        while self._heap and self._heap[0].time < until:
            entry = heapq.heappop(self._heap)
            self.now = entry.time
            entry.action(entry.time)
            self.processed += 1
        self.now = until

    def __len__(self) -> int:
        return len(self._heap)
