"""Reading an HTTP/1.x answer within bounds and a total deadline, for the checked HTTP client
(store/http_client.py).

Every socket operation gets the time left until the deadline as its timeout (one ``recv`` at a time),
so a server that drips its answer byte by byte is cut off at the deadline. The deadline is counted on an
injectable clock. Of an answer Metro reads the status line and headers (at most ``MAX_HEAD_BYTES`` in
all, interim answers and status line included, each byte scanned once: a longer head is refused) and then
either reads a short body to its end so the connection can be kept (push), or keeps at most ``max_body``
bytes of it (content length, chunked, or ended by closing; verification).
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 4 * 1024  # a body read through so that its connection can be kept
MAX_RAW_BODY_BYTES = 16 * 1024  # the most of a kept body read, a chunked body's framing included
_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [^\r\n]*)?\r?\n")  # matched at a head's start
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,8})(?:;[^\r\n]*)?\Z")

Clock = Callable[[], float]


class DeadlinePassed(TimeoutError):
    """The request's deadline passed."""


class AnswerError(Exception):
    """An answer Metro does not read further; its text says why (and names no peer)."""


class HeadTooLong(AnswerError):
    """The answer's status line and headers passed ``MAX_HEAD_BYTES``: a failed request, not retried."""


class BrokenAnswer(AnswerError, ConnectionError):
    """No HTTP/1.x answer: not HTTP, or closed before a status line (on a kept connection, worth a new one)."""


@dataclass(frozen=True)
class Deadline:
    """One deadline for a whole exchange (resolution, connect, TLS handshake, request, answer)."""

    at: float
    clock: Clock = time.monotonic

    @classmethod
    def after(cls, seconds: float, clock: Clock = time.monotonic) -> Deadline:
        return cls(clock() + seconds, clock)

    def left(self) -> float:
        """The seconds left; DeadlinePassed once the deadline passed."""
        left = self.at - self.clock()
        if left <= 0:
            raise DeadlinePassed("the deadline passed")
        return left


@dataclass
class Answer:
    status: int
    reusable: bool  # read to its end: the connection may carry the next request
    body: bytes = b""  # the kept part of the body (only when asked for)


def recv(sock: socket.socket, deadline: Deadline) -> bytes:
    sock.settimeout(deadline.left())
    return sock.recv(16 * 1024)


def _header_values(head: bytes) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            key = name.strip().lower().decode("latin-1")
            values[key] = (values[key] + "," if key in values else "") + value.strip().decode("latin-1")
    return values


def _body_length(values: dict[str, str]) -> int | None:
    """The body's length in bytes from its Content-Length, or None when it has none Metro can read."""
    length = values.get("content-length", "").strip()
    if not (length.isascii() and length.isdigit()):  # int() fails on "²"
        return None
    return int(length)


@dataclass
class _Head:
    """The answer's bytes so far and how far its current head was searched: each byte is scanned once."""

    buffer: bytearray = field(default_factory=bytearray)
    start: int = 0  # where the current head (an interim answer's, then the final one's) begins
    scanned: int = 0  # bytes before this were searched for the status line's end and the blank line
    status: int | None = None  # the current head's status, once its status line is complete

    def parse(self) -> int:
        """The index of the current head's blank line, or -1 while it has not arrived.

        Sets ``status`` once the status line is complete; HeadTooLong when the answer's heads pass
        ``MAX_HEAD_BYTES``, BrokenAnswer for an answer that is not HTTP/1.x."""
        if self.status is None:
            newline = self.buffer.find(b"\n", max(self.start, self.scanned))
            if newline >= 0:
                match = _STATUS.match(self.buffer, self.start, newline + 1)
                if match is None:
                    raise BrokenAnswer("the answer is not HTTP/1.x")
                self.status = int(match.group(2))
        end = self.buffer.find(b"\r\n\r\n", max(self.start, self.scanned - 3))
        self.scanned = len(self.buffer)
        if end + 4 > MAX_HEAD_BYTES or (end < 0 and len(self.buffer) >= MAX_HEAD_BYTES):
            raise HeadTooLong(f"the answer's head is longer than {MAX_HEAD_BYTES} bytes")
        return end

    def skip(self, end: int) -> None:
        """Go past an interim answer's head to the next one."""
        self.start = self.scanned = end + 4
        self.status = None


def _more(sock: socket.socket, head: _Head, deadline: Deadline) -> bool:
    """Read the next bytes of the answer; False when they stop (deadline, error, close) after a status line."""
    try:
        chunk = recv(sock, deadline)
    except OSError:  # the deadline (a TimeoutError) included
        if head.status is not None:
            return False
        raise
    if not chunk:
        if head.status is not None:
            return False
        raise BrokenAnswer("the connection closed before an answer")
    head.buffer += chunk
    return True


def read_answer(sock: socket.socket, deadline: Deadline, max_body: int = 0) -> Answer:
    """The final status (``100 Continue`` skipped), and up to ``max_body`` bytes of the body when asked for.

    Without ``max_body`` the connection is reusable when its answer was read to the end; with it, never."""
    head = _Head()
    while True:
        end = head.parse()
        if end < 0:
            if not _more(sock, head, deadline):
                assert head.status is not None
                return Answer(head.status, False)
            continue
        assert head.status is not None  # the blank line ends the status line too
        if head.status == 100:  # an interim answer: the final one follows
            head.skip(end)
            continue
        lines, rest = bytes(head.buffer[head.start:end]), bytes(head.buffer[end + 4:])
        if max_body:
            kept = b"" if head.status in (204, 304) else _keep_body(sock, _header_values(lines), rest, max_body,
                                                                     deadline)
            return Answer(head.status, False, kept)
        if head.status < 200 or not lines.startswith(b"HTTP/1.1"):
            return Answer(head.status, False)
        return Answer(head.status, _read_through(sock, _reusable_length(head.status, lines), rest, deadline))


def _reusable_length(status: int, head: bytes) -> int | None:
    """The body's length when the connection may be kept after it, or None when only closing it ends it."""
    if status in (204, 304):
        return 0
    values = _header_values(head)
    if "transfer-encoding" in values or "close" in values.get("connection", "").lower():
        return None
    return _body_length(values)


def _read_through(sock: socket.socket, length: int | None, rest: bytes, deadline: Deadline) -> bool:
    """Read a short body to its end; whether the connection may be reused."""
    if length is None or length > MAX_BODY_BYTES or len(rest) > length:
        return False
    got = len(rest)
    try:
        while got < length:
            chunk = recv(sock, deadline)
            if not chunk:
                return False
            got += len(chunk)
    except OSError:  # the deadline (a TimeoutError) included
        return False
    return got == length


def _keep_body(sock: socket.socket, values: dict[str, str], raw: bytes, max_body: int, deadline: Deadline) -> bytes:
    """At most ``max_body`` bytes of the body: until its length, its last chunk, the connection's end, or the
    bound (DeadlinePassed when the deadline comes first)."""
    chunked = "chunked" in values.get("transfer-encoding", "").lower()
    length = _body_length(values)
    wanted = max_body if length is None else min(length, max_body)
    buffer = bytearray(raw)
    while len(buffer) < MAX_RAW_BODY_BYTES:
        data, complete = _dechunk(bytes(buffer)) if chunked else (bytes(buffer), len(buffer) >= wanted)
        if complete or len(data) >= max_body:
            return data[:max_body]
        chunk = recv(sock, deadline)
        if not chunk:
            break
        buffer += chunk
    return (_dechunk(bytes(buffer))[0] if chunked else bytes(buffer))[:max_body]


def _dechunk(raw: bytes) -> tuple[bytes, bool]:
    """The data of a chunked body so far, and whether its last chunk arrived."""
    data, pos = bytearray(), 0
    while (eol := raw.find(b"\r\n", pos)) >= 0:
        match = _CHUNK_SIZE.match(raw[pos:eol].strip())
        if match is None:
            raise AnswerError("the answer's chunked body is malformed")
        size = int(match.group(1), 16)
        if size == 0:
            return bytes(data), True
        data += raw[eol + 2:eol + 2 + size]
        pos = eol + 2 + size + 2
        if pos > len(raw):
            break
    return bytes(data), False
