"""Torn writes: the process killed right after one write Metro makes and before the write that follows it.

Each crash point wraps one store method (on its class, so every instance in the process has it). When the wrapped
call returns having written something, then with probability ``rate`` the point prints ``crash point: <name>`` to
the process's log and calls ``exit(137)`` (``os._exit``: no cleanup, no response, as a SIGKILL would), so the next
write never happens. The fault run sums those lines from the logs (:func:`count_crashes`) and checks that no
acknowledged publish or acknowledgement was lost, and what redelivery the torn state costs.

The seams, and what follows each (chalicelib/service/publish.py, pull.py, exactly_once.py, delivery/fanout.py):

- ``publish.after-body``: ``MessageLog.put_object`` stored the request's S3 object; its log item is not written.
  Only requests over METRO_LOG_INLINE_MAX_BYTES (7,168) raw bytes have an object (a quarter of that when the stream
  fans them out): smaller ones keep their bytes in the log item, and the call writes nothing and never crashes.
- ``enqueue.after-send``: ``QueueStore.send_all`` enqueued messages. In publish's direct fan-out the log item is not
  written yet (the publish is unacknowledged, its messages already deliverable); in the stream's fan-out and its
  catch-up the item is not marked fanned; a pack sent back (service/packs.py) is not deleted yet.
- ``publish.after-log``: ``MessageLog.put_entry`` stored the log item: the publish is durable, not acknowledged.
  The dead-letter forward (service/deadletter.py) publishes through the same path: there, the forwarded copy is
  stored and the original not yet removed from its queue, so it is forwarded again later.
- ``exactly-once.after-claim``: ``ExactLeases.claim``/``claim_pack`` leased a message to a pull whose response is
  never sent (nor its ChangeMessageVisibility for redeliveries, nor the DeleteMessageBatch of acked duplicates).
- ``exactly-once.after-ack``: ``ExactLeases.ack``/``ack_pack`` marked the lease acknowledged; the message's
  DeleteMessageBatch (or a pack's settling) is not sent, and the client gets no answer.
- ``exactly-once.after-extend``: ``ExactLeases.extend`` moved the lease's deadline (modifyAckDeadline, a nack,
  a pack let go); the ChangeMessageVisibilityBatch that moves the SQS message's is not sent.

chalicelib is imported inside :func:`install`, not when this module is: a process that also skews its clock
(bench/chaos/skew.py) must install that before chalicelib is first imported.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TextIO

POINTS: dict[str, str] = {
    "publish.after-body": "S3 object of a request over 7,168 raw bytes stored; no log item yet (not acknowledged)",
    "enqueue.after-send": "messages enqueued; the log item not yet written (publish) or marked fanned (stream)",
    "publish.after-log": "log item stored; the publish not yet acknowledged to its client",
    "exactly-once.after-claim": "lease taken for a pull whose response is never sent",
    "exactly-once.after-ack": "lease marked acknowledged; the SQS message not deleted, the client not answered",
    "exactly-once.after-extend": "lease deadline moved (modack or nack); the SQS visibility not changed",
}
EXIT_CODE = 137  # what a shell reports for a process killed by SIGKILL
LINE = re.compile(r"crash point: ([\w.-]+)")

Wrote = Callable[[tuple[Any, ...], dict[str, Any], Any], bool]  # (args, kwargs, result): did the call write?


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return kwargs[name] if name in kwargs else args[index]


def _stored_object(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    return not _arg(args, kwargs, 1, "entry").logged_inline  # an inline entry: put_object writes nothing


def _always(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    return True  # the call returned: its write is stored (a failure raises)


def _sent_any(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    jobs = _arg(args, kwargs, 1, "jobs")
    return any(len(msgs) > len(r.failed) + len(r.dropped) for (_, msgs), r in zip(jobs, result))


def _ok(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    return result == "ok" or result is True  # claim: "ok"; ack, extend: True; anything else wrote nothing


def _pack_claimed(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    return bool(result[0])


def _pack_acked(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    return result is not None


@dataclasses.dataclass(frozen=True)
class Seam:
    owner: type[Any]
    method: str
    point: str
    wrote: Wrote


def seams() -> tuple[Seam, ...]:
    """Every method wrapped, with its point (chalicelib imported here, at install time)."""
    from chalicelib.store.leases import ExactLeases
    from chalicelib.store.log import MessageLog
    from chalicelib.store.queues import QueueStore

    return (
        Seam(MessageLog, "put_object", "publish.after-body", _stored_object),
        Seam(QueueStore, "send_all", "enqueue.after-send", _sent_any),
        Seam(MessageLog, "put_entry", "publish.after-log", _always),
        Seam(ExactLeases, "claim", "exactly-once.after-claim", _ok),
        Seam(ExactLeases, "claim_pack", "exactly-once.after-claim", _pack_claimed),
        Seam(ExactLeases, "ack", "exactly-once.after-ack", _ok),
        Seam(ExactLeases, "ack_pack", "exactly-once.after-ack", _pack_acked),
        Seam(ExactLeases, "extend", "exactly-once.after-extend", _ok),
    )


@dataclasses.dataclass
class Hits:
    calls: int = 0  # times the point was reached (its first write stored)
    crashes: int = 0  # times it then exited


class CrashPoints:
    """The installed crash points of this process; ``hits`` per point name."""

    def __init__(self, rate: float, points: Iterable[str] | None, seed: int | None,
                 exit: Callable[[int], None], log: TextIO) -> None:
        chosen = set(POINTS if points is None else points)
        unknown = chosen - set(POINTS)
        if unknown:
            raise ValueError(f"unknown crash points: {', '.join(sorted(unknown))} (known: {', '.join(POINTS)})")
        self.rate, self.points = rate, frozenset(chosen)
        self.hits: dict[str, Hits] = {p: Hits() for p in sorted(chosen)}
        self._random, self._exit, self._log = random.Random(seed), exit, log
        self._lock = threading.Lock()
        self._restore: list[tuple[type[Any], str, Any]] = []

    def reached(self, point: str) -> None:
        """The point's first write is stored: crash now, with probability ``rate``."""
        with self._lock:
            hits = self.hits[point]
            hits.calls += 1
            crash = self._random.random() < self.rate
            if crash:
                hits.crashes += 1
                print(f"crash point: {point}", file=self._log, flush=True)
        if crash:
            self._exit(EXIT_CODE)  # os._exit never returns; an injected exit may raise, or return (the call goes on)

    def _wrap(self, seam: Seam) -> Any:
        original = seam.owner.__dict__[seam.method]

        @functools.wraps(original)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if seam.wrote(args, kwargs, result):
                self.reached(seam.point)
            return result

        self._restore.append((seam.owner, seam.method, original))
        return wrapped

    def start(self) -> None:
        for seam in seams():
            if seam.point in self.points:
                setattr(seam.owner, seam.method, self._wrap(seam))

    def uninstall(self) -> None:
        """Put back every method wrapped."""
        for owner, method, original in reversed(self._restore):
            setattr(owner, method, original)
        self._restore.clear()
        if self in _installed:
            _installed.remove(self)


_installed: list[CrashPoints] = []  # at most one


def install(rate: float, points: Iterable[str] | None = None, seed: int | None = None,
            exit: Callable[[int], None] = os._exit, log: TextIO = sys.stderr) -> CrashPoints:
    """Wrap the methods of ``points`` (all of :data:`POINTS` by default) in this process; one set at a time."""
    if _installed:
        raise RuntimeError("crash points are installed already: uninstall them first")
    crash = CrashPoints(rate, points, seed, exit, log)
    crash.start()
    _installed.append(crash)
    return crash


def uninstall() -> None:
    """Remove the installed crash points, if any."""
    for crash in list(_installed):
        crash.uninstall()


def count_crashes(log_text: str) -> dict[str, int]:
    """Crashes per point, from the lines :meth:`CrashPoints.reached` wrote into a process's log."""
    return dict(Counter(LINE.findall(log_text)))
