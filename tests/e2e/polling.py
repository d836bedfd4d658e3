"""Bounded polls of a stack that runs in another process (its clock cannot be injected)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def pull_until(pull: Callable[[], list[Any]], count: int, timeout: float = 20) -> list[Any]:
    """Call ``pull`` until it has returned ``count`` items in all, or ``timeout`` seconds have passed."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += pull()
    return got
