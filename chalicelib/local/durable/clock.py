"""The emulator's SQS clock, held still while a call runs, so that replaying the call at its recorded time does
what it did then: the same messages visible, the same visibility deadlines and receive timestamps.

moto's SQS models read the time through their module's ``unix_time``/``unix_time_millis`` (once per use); the
wrappers here answer the held time when there is one and defer to what was in place before (moto's, or the
speed-up's) otherwise. Only the recorder holds the clock, one call at a time under its lock.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_held: list[float] = []  # the time of the call running now, if any


@functools.cache
def install() -> None:
    import moto.sqs.models as sqs_models

    module: Any = sqs_models
    before, before_millis = module.unix_time, module.unix_time_millis

    def unix_time(dt: datetime.datetime | None = None) -> float:
        return _held[-1] if dt is None and _held else float(before(dt))

    def unix_time_millis(dt: datetime.datetime | None = None) -> float:
        return _held[-1] * 1000.0 if dt is None and _held else float(before_millis(dt))

    module.unix_time, module.unix_time_millis = unix_time, unix_time_millis


@contextmanager
def held_at(seconds: float) -> Iterator[None]:
    _held.append(seconds)
    try:
        yield
    finally:
        _held.pop()
