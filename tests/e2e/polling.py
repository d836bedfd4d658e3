"""Bounded polls of a stack that runs in another process (its clock cannot be injected)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def pull_until(pull: Callable[[], list[Any]], count: int, timeout: float = 20) -> list[Any]:
    """Call ``pull`` until it has returned ``count`` items in all, or ``timeout`` seconds have passed."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += pull()
    return got


def read_until(read: Callable[[], T], done: Callable[[T], bool], timeout: float = 30, interval: float = 0.5) -> T:
    """Call ``read`` every ``interval`` seconds until ``done`` says its answer is complete, or ``timeout`` seconds
    have passed; the last answer either way."""
    deadline = time.monotonic() + timeout
    got = read()
    while not done(got) and time.monotonic() < deadline:
        time.sleep(interval)
        got = read()
    return got
