"""Clock skew injected into one process of the fault run: its wall clock runs ahead, behind, or jumps back and forth.

Metro reads wall time through ``time.time()``: leases, ack deadlines, publish times, retention and TTLs all come
from it (``Context.clock``). :func:`install` replaces ``time.time`` (and ``time.time_ns``, so the two agree) in this
process with the real time plus an offset, which a daemon thread re-reads from a control file every ``poll``
seconds, so the harness can change a running process's skew by rewriting that file (:func:`write`).

Install it BEFORE anything imports chalicelib. ``Context`` is a dataclass whose field default is
``clock: Clock = time.time``, evaluated once, when chalicelib/service/context.py is imported, as are the ``clock``
defaults of the local pumps: a process that imports chalicelib first keeps the real clock in those places whatever
``time.time`` becomes later. Code that looks ``time.time`` up at each call sees the skew either way.

Control file, JSON: ``{"offset": 2.5}`` (steady), ``{"strobe": [-2.0, 2.0], "period": 0.25}`` (the offsets in turn,
each for ``period`` seconds of real time), or missing, empty or ``{}`` (no skew). A file that cannot be read as
one of these keeps the last offset: a fault tool must never be what crashes the process.

What is not skewed: ``time.monotonic`` and ``time.perf_counter`` (they measure intervals, as on a real host whose
wall clock is wrong), and ``datetime.datetime.now``/``utcnow`` (a C type, which cannot be patched). chalicelib
reads ``datetime.now`` only for the local TLS certificate's validity (a five-minute margin); its timestamps are
formatted from ``time.time()`` values. moto's clock is ``moto.core.utils.utcnow``, a ``datetime.now``: with
``moto=True`` (the emulator process) it and every copy other moto modules imported of it are replaced by one on
the skewed clock, so SQS visibility, delays and retention, and DynamoDB and S3 timestamps, all follow the skew.
The SQS clock Metro's speed-ups install (chalicelib/local/moto_speedups.py) calls ``time.time()`` and follows it
anyway, whichever is applied first.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

SKEWS: tuple[dict[str, Any], ...] = (
    {"offset": 3.0},  # ahead: leases and deadlines written here look longer-lived to the other processes
    {"offset": -3.0},  # behind: what this process writes looks stale elsewhere
    {"strobe": [-2.0, 2.0], "period": 0.25},  # the wall clock jumps back and forth by 4 s
    {"strobe": [-0.5, 0.5], "period": 0.05},  # small, fast jumps: ordering within a second
)

# The emulator stands in for AWS, whose clock may disagree with Metro's but never jumps: it runs this far ahead
# for a whole run, set before it starts, and the nemesis skews only Metro's processes around it. Stepping the
# emulator's own clock back makes moto's FIFO group lock hand out a later message of a group whose earlier one
# was just made visible again (docs/decisions/emulator-clock.md), which SQS cannot do.
EMULATOR_OFFSET = 1.5

_REAL_TIME = time.time  # the originals, captured when this module is first imported (before any install)
_REAL_TIME_NS = time.time_ns
_installed: list[SkewedClock] = []  # at most one


@dataclasses.dataclass(frozen=True)
class Skew:
    """Offsets in seconds, taken in turn for ``period`` seconds of real time each (one offset: steady)."""

    offsets: tuple[float, ...] = (0.0,)
    period: float = 0.0

    def at(self, real: float) -> float:
        if len(self.offsets) == 1:
            return self.offsets[0]
        return self.offsets[int(real // self.period) % len(self.offsets)]


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def parse(spec: dict[str, Any]) -> Skew:
    """The skew a control file's JSON object asks for; ValueError if it is none."""
    if not isinstance(spec, dict):
        raise ValueError(f"a skew is a JSON object, not {spec!r}")
    if "strobe" in spec:
        offsets = spec["strobe"]
        if not isinstance(offsets, list) or not offsets:
            raise ValueError(f"strobe: a non-empty list of offsets, not {offsets!r}")
        period = _number(spec.get("period"))
        if period <= 0:
            raise ValueError(f"period: seconds above 0, not {period}")
        return Skew(tuple(_number(o) for o in offsets), period)
    return Skew((_number(spec.get("offset", 0.0)),))


def describe(spec: dict[str, Any]) -> str:
    """A short label for a skew, for reports: ``steady +3 s``, ``strobe -2/+2 s every 0.25 s``, ``no skew``."""
    skew = parse(spec)
    if len(skew.offsets) > 1:
        return f"strobe {'/'.join(f'{o:+g}' for o in skew.offsets)} s every {skew.period:g} s"
    return f"steady {skew.offsets[0]:+g} s" if skew.offsets[0] else "no skew"


def write(control: Path, spec: dict[str, Any]) -> None:
    """Set the skew of the processes reading ``control``, atomically (a temporary file renamed over it)."""
    parse(spec)  # the harness's mistake is reported here, not ignored by the process
    tmp = control.with_name(f".{control.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(spec))
    os.replace(tmp, control)


def read(control: Path) -> Skew:
    """The skew the control file asks for now; ValueError (or OSError) if it cannot be read as one."""
    try:
        text = control.read_text()
    except FileNotFoundError:
        return Skew()
    return parse(json.loads(text)) if text.strip() else Skew()


class SkewedClock:
    """The process's skewed wall clock: :meth:`time` and :meth:`time_ns` stand in for ``time.time``/``time_ns``.

    Each call reads the current :class:`Skew` once (one reference, replaced whole by :meth:`refresh`): no lock,
    and it calls ``real``, never ``time.time``, so it cannot recurse into itself."""

    def __init__(self, control: Path, real: Callable[[], float] = _REAL_TIME, poll: float = 0.1) -> None:
        self.control, self.poll, self._real = control, poll, real
        self._real_ns: Callable[[], int] = _REAL_TIME_NS if real is _REAL_TIME else self._ns_of_real
        self.skew = Skew()
        self.errors = 0  # control file reads that kept the last skew
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._restore: list[tuple[ModuleType, str, Any]] = []

    def _ns_of_real(self) -> int:
        return int(self._real() * 1e9)

    def offset(self) -> float:
        """The offset now, in seconds."""
        return self.skew.at(self._real())

    def time(self) -> float:
        real = self._real()
        return real + self.skew.at(real)

    def time_ns(self) -> int:
        real = self._real_ns()
        return real + int(self.skew.at(real / 1e9) * 1e9)

    def utcnow(self) -> datetime.datetime:
        """moto's clock (naive UTC), on this one."""
        return datetime.datetime.fromtimestamp(self.time(), datetime.timezone.utc).replace(tzinfo=None)

    def refresh(self) -> None:
        """Read the control file again; a malformed one keeps the last skew."""
        try:
            self.skew = read(self.control)
        except (OSError, ValueError):
            self.errors += 1

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.refresh()

    def _patch(self, module: ModuleType, name: str, value: Any) -> None:
        self._restore.append((module, name, getattr(module, name)))
        setattr(module, name, value)

    def start(self, moto: bool) -> None:
        self.refresh()
        self._patch(time, "time", self.time)
        self._patch(time, "time_ns", self.time_ns)
        if moto:
            self._cover_moto()
        if self.poll > 0:
            self._thread = threading.Thread(target=self._run, name="clock-skew", daemon=True)
            self._thread.start()

    def _cover_moto(self) -> None:
        """moto's ``utcnow``, and every moto module's copy of it, on this clock; modules imported later copy
        the replacement."""
        from moto.core import utils

        original = utils.utcnow
        for module in _moto_modules_holding(original):
            self._patch(module, "utcnow", self.utcnow)

    def uninstall(self) -> None:
        """Stop re-reading the file and put back every function replaced."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for module, name, value in reversed(self._restore):
            setattr(module, name, value)
        self._restore.clear()
        if self in _installed:
            _installed.remove(self)

    def __enter__(self) -> SkewedClock:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.uninstall()


def _moto_modules_holding(function: Any) -> Iterator[ModuleType]:
    """moto.core.utils first, then every loaded moto module that imported ``function`` by name."""
    from moto.core import utils

    yield utils
    for name, module in list(sys.modules.items()):
        if name.startswith("moto.") and module is not utils and getattr(module, "utcnow", None) is function:
            yield module


def install(control: Path, real: Callable[[], float] = _REAL_TIME, poll: float = 0.1,
            moto: bool = False) -> SkewedClock:
    """Skew this process's wall clock by what ``control`` says, re-read every ``poll`` seconds (0: only when
    :meth:`SkewedClock.refresh` is called). ``moto``: skew moto's clock too (the emulator process). Call it
    before importing chalicelib (see the module's docstring); one clock at a time per process."""
    if _installed:
        raise RuntimeError("a skewed clock is installed already: uninstall it first")
    clock = SkewedClock(control, real, poll)
    clock.start(moto)
    _installed.append(clock)
    return clock


def uninstall() -> None:
    """Put back the real clock, if a skewed one is installed."""
    for clock in list(_installed):
        clock.uninstall()
