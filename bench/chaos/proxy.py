"""A local TCP proxy that cuts, slows or resets the network between Metro's processes and the AWS emulator.

Each Metro process reaches the emulator through the proxy (its AWS_ENDPOINT_URL is ``PartitionProxy.url``); the
proxy forwards every connection to the emulator's port. ``up`` is the client-to-emulator direction (Metro's
requests), ``down`` the emulator-to-client one (its answers). ``set(mode, direction, delay)`` replaces the current
fault at once, for open and new connections alike: the mode applies to the given direction (or both) and the other
direction passes.

- ``pass``: bytes are forwarded as they come.
- ``blackhole``: bytes are held in the proxy, not forwarded, as if the packets were lost while TCP retransmits. New
  connections are still accepted and connected to the emulator; their bytes are held too. When the mode changes
  back, the held bytes go out in order on the same connection, so a request or answer that waited out the partition
  arrives late. A peer that gives up meanwhile (closes its socket) ends the connection: the proxy closes the other
  side with an ordinary close and drops whatever it held for that connection.
- ``delay``: each chunk is forwarded ``delay`` seconds after the proxy received it; order is kept per connection.
  An end of stream is delayed like the bytes before it.
- ``reset``: every open connection is reset (closed with SO_LINGER 0, so both peers see ECONNRESET) and each new
  connection is reset as soon as it is accepted, until the mode changes. The direction does not matter.

In ``pass`` and ``delay`` a peer's close is passed on as a half-close after the bytes before it; a socket error on
either side resets both. One thread serves every connection with a selector. A direction stops reading once it
holds ``HOLD_LIMIT`` bytes, so a long partition pushes back on the sender as a full TCP window would.
"""

from __future__ import annotations

import contextlib
import math
import selectors
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

MODES = ("pass", "blackhole", "delay", "reset")
DIRECTIONS = ("both", "up", "down")
# The faults worth injecting in a fault schedule, as (mode, direction).
PARTITIONS: tuple[tuple[str, str], ...] = (
    ("blackhole", "both"),
    ("blackhole", "up"),
    ("blackhole", "down"),
    ("delay", "both"),
    ("reset", "both"),
)
CHUNK = 256 * 1024
HOLD_LIMIT = 4 * 1024 * 1024
_LINGER_0 = struct.pack("ii", 1, 0)
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


def describe(mode: str, direction: str = "both", delay: float = 0.0) -> str:
    """A short label for reports: ``pass``, ``reset``, ``blackhole up``, ``delay both 2s``."""
    if mode in ("pass", "reset"):
        return mode
    if mode == "delay":
        return f"delay {direction} {delay:g}s"
    return f"{mode} {direction}"


def _shut(sock: socket.socket, reset: bool) -> None:
    """Close a socket; with ``reset`` the peer gets an RST (SO_LINGER 0) instead of a FIN."""
    if reset:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_0)
    sock.close()


@dataclass(eq=False)
class _Flow:
    """One direction of a connection: what came from ``src`` and is not yet written to ``dst``."""

    name: str  # "up" or "down"
    src: socket.socket
    dst: socket.socket
    queue: deque[tuple[float, memoryview]] = field(default_factory=deque)  # (arrival, bytes); empty: end of stream
    held: int = 0
    eof_in: bool = False
    eof_out: bool = False
    blocked: bool = False  # dst's send buffer is full


@dataclass(eq=False)
class _Conn:
    up: _Flow  # reads the client, writes the upstream
    down: _Flow
    closed: bool = False


class PartitionProxy:
    """Forwards local TCP connections to ``host:upstream_port`` and injects the fault last given to ``set``."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self.upstream_port = upstream_port
        self.host = host
        self.port = 0
        self._fault: tuple[str, str, float] = ("pass", "both", 0.0)
        self._counts = dict.fromkeys(("accepted", "reset", "failed", "bytes_up", "bytes_down"), 0)
        self._held = 0
        self._conns: set[_Conn] = set()
        self._pending: set[_Conn] = set()  # connections with bytes still queued
        self._due = math.inf  # earliest time a delayed chunk may go out
        self._sel = selectors.DefaultSelector()
        self._masks: dict[socket.socket, int] = {}
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._cond = threading.Condition()
        self._asked = self._applied = 0
        self._stopping = False
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> PartitionProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, 0))
        listener.listen(256)
        for sock in (listener, self._wake_r, self._wake_w):
            sock.setblocking(False)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._sel.register(listener, _READ)
        self._sel.register(self._wake_r, _READ)
        self._thread = threading.Thread(target=self._run, name="partition-proxy", daemon=True)
        self._thread.start()
        return self

    def set(self, mode: str, direction: str = "both", delay: float = 0.0) -> None:
        """Replace the fault; returns once the proxy applied it (held bytes released, connections reset)."""
        if mode not in MODES or direction not in DIRECTIONS or delay < 0:
            raise ValueError(f"bad fault: {mode!r} {direction!r} {delay!r}")
        with self._cond:
            self._fault = (mode, direction, float(delay))
            self._asked += 1
            asked = self._asked
            self._wake()
            if self._thread is not None and self._thread.is_alive():
                self._cond.wait_for(lambda: self._applied >= asked, timeout=5.0)

    def stats(self) -> dict[str, Any]:
        mode, direction, delay = self._fault
        gauges = {"open": len(self._conns), "held": self._held, "mode": mode, "direction": direction, "delay": delay}
        return {**self._counts, **gauges, "label": describe(mode, direction, delay)}

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        if self._thread is not None:
            self._thread.join(5.0)
        else:
            self._close_all()

    # The loop thread owns every socket below.

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _run(self) -> None:
        try:
            while not self._stopping:
                timeout = None if self._due == math.inf else max(0.0, self._due - time.monotonic())
                for key, events in self._sel.select(timeout):
                    self._dispatch(key, events)
                if time.monotonic() >= self._due:
                    self._sweep()
        finally:
            self._close_all()

    def _dispatch(self, key: selectors.SelectorKey, events: int) -> None:
        if key.fileobj is self._listener:
            self._accept_all()
        elif key.fileobj is self._wake_r:
            self._on_wake()
        else:
            conn, reading, writing = key.data
            if events & _WRITE and not conn.closed:
                self._flush(conn, writing)
            if events & _READ and not conn.closed:
                self._read(conn, reading)
            self._refresh(conn)

    def _on_wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
        with self._cond:
            asked = self._asked
        if self._fault[0] == "reset":
            for conn in list(self._conns):
                self._counts["reset"] += 1
                self._close(conn, reset=True)
        self._sweep()
        with self._cond:
            self._applied = asked
            self._cond.notify_all()

    def _accept_all(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # BlockingIOError: none left
                return
            self._counts["accepted"] += 1
            if self._fault[0] == "reset":
                self._counts["reset"] += 1
                _shut(client, reset=True)
            else:
                self._open(client)

    def _open(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection((self.host, self.upstream_port), timeout=2.0)
        except OSError:
            self._counts["failed"] += 1
            _shut(client, reset=True)
            return
        for sock in (client, upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(_Flow("up", client, upstream), _Flow("down", upstream, client))
        self._conns.add(conn)
        self._refresh(conn)

    def _mode(self, name: str) -> tuple[str, float]:
        mode, direction, delay = self._fault
        return (mode, delay) if direction in ("both", name) else ("pass", 0.0)

    def _released(self, flow: _Flow, arrived: float, now: float) -> bool:
        mode, delay = self._mode(flow.name)
        if mode == "pass":
            return True
        if mode == "delay":
            if now >= arrived + delay:
                return True
            self._due = min(self._due, arrived + delay)
        return False

    def _read(self, conn: _Conn, flow: _Flow) -> None:
        try:
            data = flow.src.recv(CHUNK)
        except BlockingIOError:
            return
        except OSError:
            self._fail(conn)
            return
        if not data:
            flow.eof_in = True
            if self._fault[0] == "blackhole":  # the peer gave up during a partition
                self._close(conn, reset=False)
                return
        flow.queue.append((time.monotonic(), memoryview(data)))
        flow.held += len(data)
        self._held += len(data)
        self._flush(conn, flow)

    def _flush(self, conn: _Conn, flow: _Flow) -> None:
        now = time.monotonic()
        flow.blocked = False
        while flow.queue and not conn.closed:
            arrived, data = flow.queue[0]
            if not self._released(flow, arrived, now):
                break
            if not data:
                flow.queue.popleft()
                self._end(conn, flow)
                break
            try:
                sent = flow.dst.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._fail(conn)
                return
            flow.held -= sent
            self._held -= sent
            self._counts[f"bytes_{flow.name}"] += sent
            if sent < len(data):
                flow.queue[0] = (arrived, data[sent:])
                flow.blocked = True
                break
            flow.queue.popleft()
        if conn.closed or not (conn.up.queue or conn.down.queue):
            self._pending.discard(conn)
        else:
            self._pending.add(conn)

    def _end(self, conn: _Conn, flow: _Flow) -> None:
        """Pass a peer's end of stream on as a half-close; close the connection once both ends are done."""
        flow.eof_out = True
        try:
            flow.dst.shutdown(socket.SHUT_WR)
        except OSError:
            self._fail(conn)
            return
        if conn.up.eof_out and conn.down.eof_out:
            self._close(conn, reset=False)

    def _sweep(self) -> None:
        """Release what the fault now lets out; reschedule the next delayed chunk."""
        self._due = math.inf
        for conn in list(self._pending):
            for flow in (conn.up, conn.down):
                if not flow.blocked and not conn.closed:
                    self._flush(conn, flow)
            self._refresh(conn)

    def _refresh(self, conn: _Conn) -> None:
        if not conn.closed:
            self._watch(conn.up.src, self._mask(conn.up, conn.down), (conn, conn.up, conn.down))
            self._watch(conn.down.src, self._mask(conn.down, conn.up), (conn, conn.down, conn.up))

    @staticmethod
    def _mask(reading: _Flow, writing: _Flow) -> int:
        mask = _READ if not reading.eof_in and reading.held < HOLD_LIMIT else 0
        return mask | (_WRITE if writing.blocked else 0)

    def _watch(self, sock: socket.socket, mask: int, data: tuple[_Conn, _Flow, _Flow]) -> None:
        old = self._masks.get(sock, 0)
        if mask == old:
            return
        if not old:
            self._sel.register(sock, mask, data)
        elif not mask:
            self._sel.unregister(sock)
        else:
            self._sel.modify(sock, mask, data)
        self._masks[sock] = mask

    def _fail(self, conn: _Conn) -> None:
        self._counts["failed"] += 1
        self._close(conn, reset=True)

    def _close(self, conn: _Conn, reset: bool) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        self._pending.discard(conn)
        self._held -= conn.up.held + conn.down.held
        for sock in (conn.up.src, conn.down.src):
            if self._masks.pop(sock, 0):
                self._sel.unregister(sock)
            _shut(sock, reset)

    def _close_all(self) -> None:
        for conn in list(self._conns):
            self._close(conn, reset=False)
        for sock in (self._listener, self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        self._sel.close()
