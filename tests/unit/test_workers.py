"""The stores' one thread pool (store/workers.py), owned by the Context: created on first use, shared by every
store that runs calls side by side, and never waited on from inside itself."""

from __future__ import annotations

import threading

import pytest

from chalicelib.config import Config
from chalicelib.service.context import Context
from chalicelib.store.workers import Workers


def test_no_thread_starts_until_a_store_needs_one() -> None:
    before = threading.active_count()
    ctx = Context.from_config(Config())
    assert not ctx.workers.started and threading.active_count() == before
    for store in (ctx.resources, ctx.queues, ctx.exact, ctx.history, ctx.resolver):
        assert store._workers is ctx.workers  # one pool for every store that uses one
    assert ctx.workers.map(lambda n: n * 2, [1, 2, 3]) == [2, 4, 6]
    assert ctx.workers.started


def test_map_keeps_the_order_and_raises_the_first_failure() -> None:
    workers = Workers(max_workers=4)
    assert workers.map(str, range(50)) == [str(n) for n in range(50)]

    def fail_on_three(n: int) -> int:
        if n == 3:
            raise ValueError("three")
        return n

    with pytest.raises(ValueError, match="three"):
        workers.map(fail_on_three, range(8))


def test_one_item_or_none_runs_on_the_callers_thread() -> None:
    workers = Workers()
    assert workers.map(lambda _: threading.current_thread().name, ["x"]) == [threading.current_thread().name]
    assert workers.map(str, []) == [] and not workers.started


def test_a_task_that_asks_for_workers_runs_its_inner_tasks_itself() -> None:
    """A pool of one whose task maps more work on the same pool: queued behind itself, it would wait forever."""
    workers = Workers(max_workers=1)

    def outer(n: int) -> list[str]:
        inner = workers.map(lambda _: threading.current_thread().name, range(3))
        return [*inner, workers.submit(lambda: threading.current_thread().name).result(timeout=5)]

    names = workers.submit(lambda: outer(0)).result(timeout=5)
    assert len(set(names)) == 1 and names[0].startswith("metro-store")


def test_submit_hands_back_a_failure_through_the_future() -> None:
    workers = Workers(max_workers=1)

    def inside() -> None:
        failed = workers.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failed.result()

    workers.submit(inside).result(timeout=5)
    with pytest.raises(ZeroDivisionError):
        workers.submit(lambda: 1 / 0).result(timeout=5)
