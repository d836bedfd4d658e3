"""A small time-bounded cache (the clock is passed in, so tests need no sleeps)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """Values kept for ``ttl`` seconds; ``ttl <= 0`` disables caching. Thread-safe.

    At most ``max_items`` entries: when full, the least recently used one makes room for a new one, so a
    flood of distinct keys cannot push out the whole cache at once.
    """

    def __init__(self, ttl: float, max_items: int = 4096) -> None:
        self.ttl = ttl
        self._max = max(1, max_items)
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K, now: float) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            if now - hit[0] >= self.ttl:
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return hit[1]

    def put(self, key: K, value: V, now: float) -> None:
        if self.ttl <= 0:
            return
        with self._lock:
            self._items.pop(key, None)
            while len(self._items) >= self._max:
                self._items.popitem(last=False)  # the least recently used
            self._items[key] = (now, value)

    def drop(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)
