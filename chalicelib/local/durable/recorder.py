"""The emulator made durable: its WSGI application wrapped so that every call that changes state is journaled
before it is answered, and replayed, after the last snapshot, when the stack starts again.

Replaying a call must do what the call did. Calls therefore run one at a time (moto runs on the GIL: little is
lost), each with the SQS clock held at its recorded time and moto's random generator seeded with its recorded
seed (message ids, receipt handles). A long poll runs as short polls that wait, between two, for the next call
that changes state: it never holds the others off. docs/decisions/local-durable-state.md says why this design
and what it measured.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chalicelib.local import wsgi
from chalicelib.local.durable import classify, clock, snapshot
from chalicelib.local.durable.data_dir import DataDir
from chalicelib.local.durable.journal import MAGIC, Call, Journal
from chalicelib.local.wsgi import WsgiApp

log = logging.getLogger("metro.local.state")

_SKIPPED_PREFIXES = ("wsgi.", "werkzeug.", "REMOTE_")
_RECHECK_SECONDS = 0.1  # a long poll looks again this often for messages whose visibility ran out


@dataclass(frozen=True)
class Answer:
    status: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def ok(self) -> bool:
        return self.status.startswith("2")


@dataclass(frozen=True)
class Restored:
    snapshot_generation: int | None
    replayed: int
    diverged: int  # replayed calls that did not answer 2xx (logged)
    torn_bytes: int
    seconds: float


def _request_fields(environ: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in environ.items() if not k.startswith(_SKIPPED_PREFIXES) and k != "CONTENT_LENGTH"}


def _read_body(environ: dict[str, Any]) -> bytes:
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    length = environ.get("CONTENT_LENGTH")
    if length:
        return bytes(stream.read(int(length)))
    return bytes(stream.read()) if environ.get("wsgi.input_terminated") else b""


class DurableEmulator:
    """The WSGI application the emulator's server runs, around moto's."""

    def __init__(self, app: WsgiApp, data: DataDir, moto_version: str, snapshot_bytes: int) -> None:
        self._app = app
        self._data = data
        self._moto_version = moto_version
        self._snapshot_bytes = snapshot_bytes
        self._changed = threading.Condition(threading.RLock())  # its lock runs the calls one at a time
        self._journal: Journal | None = None
        clock.install()

    # -- start: the snapshot, then the journal that continues it -------------------------------------------------
    def restore(self) -> Restored:
        started = time.perf_counter()
        snap, reading = self._data.load()
        if snap is not None:
            if snap.moto_version != self._moto_version:
                raise RuntimeError(f"{self._data.path} was written with moto {snap.moto_version}, this Metro runs "
                                   f"moto {self._moto_version}: `make reset` starts afresh")
            snapshot.restore(snap)
        diverged = 0
        with self._changed:
            for call in reading.calls:
                if not self._run(call).ok:
                    diverged += 1
            self._journal = self._data.open_journal(reading.whole_bytes)
        if reading.torn_bytes:
            log.warning("dropped a torn last record of %d bytes from %s (the stack stopped while writing it)",
                        reading.torn_bytes, self._data.journal_path(self._data.generation))
        if diverged:
            log.warning("%d replayed calls did not answer as they did first", diverged)
        return Restored(snap.generation if snap else None, len(reading.calls), diverged, reading.torn_bytes,
                        time.perf_counter() - started)

    # -- serving ---------------------------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = _read_body(environ)
        fields = _request_fields(environ)
        kind = classify.kind_of(fields, body)
        if kind is classify.Kind.receive:
            answer = self._receive(fields, body)
        else:
            with self._changed:
                answer = self._call(fields, body, keep=kind is classify.Kind.write)
        start_response(answer.status, answer.headers)
        return [answer.body]

    def _call(self, fields: dict[str, Any], body: bytes, keep: bool) -> Answer:
        call = Call(time.time(), (secrets.randbits(63) | 1) if keep else 0, fields, body)
        answer = self._run(call)
        if keep and answer.ok:
            self._keep(call)
        return answer

    def _receive(self, fields: dict[str, Any], body: bytes) -> Answer:
        wait, short = classify.receive_wait(fields, body)
        deadline = time.monotonic() + wait
        with self._changed:
            while True:
                call = Call(time.time(), secrets.randbits(63) | 1, fields, short)
                answer = self._run(call)
                if answer.ok and classify.handed_out_messages(answer.body):
                    self._keep(call)
                    return answer
                left = deadline - time.monotonic()
                if not answer.ok or left <= 0:
                    return answer
                self._changed.wait(min(left, _RECHECK_SECONDS))

    def _keep(self, call: Call) -> None:
        """Journal the call (before its answer leaves), wake long polls, fold the journal when it is large."""
        assert self._journal is not None, "restore() opens the journal before the emulator serves"
        self._journal.append(call)
        self._changed.notify_all()
        if self._journal.size >= self._snapshot_bytes:
            self.fold()

    def _run(self, call: Call) -> Answer:
        from moto.moto_api._internal import mock_random

        environ = {**call.environ, **wsgi.server_fields(call.body)}
        if call.seed:  # a call that may be journaled: its ids drawn from its own seed (reads draw none that matter)
            mock_random.seed(call.seed)
        with clock.held_at(call.at):
            return Answer(*wsgi.call(self._app, environ))

    # -- folding and stopping ----------------------------------------------------------------------------------------
    def fold(self) -> int:
        """Snapshot now and start a new journal; returns the snapshot's size in bytes."""
        with self._changed:
            assert self._journal is not None
            started = time.perf_counter()
            self._journal, size = self._data.fold(self._journal, self._moto_version)
            log.info("state snapshot: %.1f MiB in %.2f s", size / 2**20, time.perf_counter() - started)
            return size

    @property
    def directory(self) -> Path:
        return self._data.path

    def abandon(self) -> None:
        """Release the directory without folding (the restore failed)."""
        self._data.close()

    def close(self) -> None:
        """At a clean stop: fold, so that the next start loads a snapshot instead of replaying."""
        with self._changed:
            if self._journal is not None:
                if self._journal.size > len(MAGIC):
                    self.fold()
                self._journal.close()
                self._journal = None
            self._data.close()


def data_path(directory: str) -> Path:
    return Path(directory).expanduser().resolve()
