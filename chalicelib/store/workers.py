"""The one thread pool of a process's stores, owned by its Context (service/context.py) and handed to the
stores that run AWS calls (and DNS lookups) concurrently.

The pool is created on first use, not at import: a process that never fans out, seeks or resolves starts
no thread, and a test builds its own. A task that itself asks for workers (a store call inside a store
call) runs its inner tasks on its own thread, so tasks never wait for each other's workers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from chalicelib.store.call_record import carry

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS = 32  # botocore clients are thread-safe; the old per-store pools held 60 threads between them


class Workers:
    def __init__(self, max_workers: int = MAX_WORKERS) -> None:
        self.max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._inside = threading.local()

    @property
    def started(self) -> bool:
        """Whether the pool exists yet (it is created on first use)."""
        return self._pool is not None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="metro-store",
                                                initializer=self._mark)
            return self._pool

    def _mark(self) -> None:
        self._inside.worker = True

    def _in_worker(self) -> bool:
        return bool(getattr(self._inside, "worker", False))

    def submit(self, fn: Callable[[], R]) -> Future[R]:
        """``fn()`` on a worker (on this thread when it is a worker already)."""
        if self._in_worker():
            done: Future[R] = Future()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller through the future, as a pool's worker does
                done.set_exception(exc)
            return done
        return self._executor().submit(carry(fn))  # the caller's acting function (IAM call recorder)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``fn`` of every item, concurrently; results in the items' order, the first failure raised."""
        listed = list(items)
        if len(listed) <= 1 or self._in_worker():
            return [fn(item) for item in listed]
        return list(self._executor().map(carry(fn), listed))
