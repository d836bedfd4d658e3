"""A small time-bounded cache (the clock is passed in, so tests need no sleeps)."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """Values kept for ``ttl`` seconds; ``ttl <= 0`` disables caching. Thread-safe."""

    def __init__(self, ttl: float, max_items: int = 4096) -> None:
        self.ttl = ttl
        self._max = max_items
        self._items: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, now: float) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            if now - hit[0] >= self.ttl:
                del self._items[key]
                return None
            return hit[1]

    def put(self, key: K, value: V, now: float) -> None:
        if self.ttl <= 0:
            return
        with self._lock:
            if len(self._items) >= self._max:
                self._items.clear()  # a warm process serves few names; starting over is simplest
            self._items[key] = (now, value)

    def drop(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)
