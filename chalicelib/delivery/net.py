"""The push HTTP client: one POST to a checked address, ended by a total deadline.

:func:`post` sends the request to the host, port and request target of a checked
:class:`~chalicelib.core.endpoints.Target` and connects only to the addresses that were checked
(never resolving again): for https the TLS handshake still sends the host name (SNI) and verifies
the certificate for it, and ``Host`` is the URL's host. After connecting, the peer address is
compared with the checked addresses once more.

Every socket operation gets the time left until the deadline as its timeout (a send loop for the
body, one ``recv`` at a time for the answer), so a server that drips its answer byte by byte is cut
off at the deadline. Of the answer Metro reads the status line and headers (at most
``MAX_HEAD_BYTES`` in all, interim answers and status line included, each byte scanned once: a
longer head is a failed push) and at most ``MAX_BODY_BYTES`` of body: a connection whose body is
longer, chunked, or delimited by close is closed rather than drained. Connections whose answer was
read completely are kept for reuse (keep-alive), a bounded number per destination.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from urllib3.util.wait import wait_for_read

from chalicelib.core.endpoints import Address, Target

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 4 * 1024
MAX_DESTINATIONS = 64
MAX_IDLE_PER_DESTINATION = 16
_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [^\r\n]*)?\r?\n")  # matched at a head's start
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_VALUE = re.compile(r"^[\t\x20-\x7e\x80-\xff]*\Z")
_OWN_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "upgrade",
                "trailer", "expect"}

Destination = tuple[str, str, int, str]  # (scheme, address, port, host name)


class PushTimeout(Exception):
    """The deadline of the push passed."""


class PeerMismatch(Exception):
    """The socket is connected to an address that was not checked."""


class HeadTooLong(Exception):
    """The answer's status line and headers passed ``MAX_HEAD_BYTES``: a failed push, not retried."""


@dataclass
class Answer:
    status: int
    reusable: bool


# -- connections ----------------------------------------------------------------------------------
_IDLE: OrderedDict[Destination, list[socket.socket]] = OrderedDict()
_IDLE_LOCK = threading.Lock()
_TLS = ssl.create_default_context()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise PushTimeout()
    return left


def _take_idle(dest: Destination) -> socket.socket | None:
    """A kept connection to ``dest`` that the server has not closed meanwhile."""
    while True:
        with _IDLE_LOCK:
            socks = _IDLE.get(dest)
            if not socks:
                return None
            sock = socks.pop()
        dropped = wait_for_read(sock, timeout=0.0) or (isinstance(sock, ssl.SSLSocket) and sock.pending() > 0)
        if not dropped:
            return sock
        sock.close()


def _keep(dest: Destination, sock: socket.socket) -> None:
    evicted: list[socket.socket] = []
    with _IDLE_LOCK:
        socks = _IDLE.setdefault(dest, [])
        _IDLE.move_to_end(dest)
        socks.append(sock)
        if len(socks) > MAX_IDLE_PER_DESTINATION:
            evicted.append(socks.pop(0))
        while len(_IDLE) > MAX_DESTINATIONS:
            evicted.extend(_IDLE.popitem(last=False)[1])
    for old in evicted:
        old.close()


def _connect(target: Target, address: Address, deadline: float) -> socket.socket:
    endpoint = target.endpoint
    sock = socket.create_connection((str(address), endpoint.port), timeout=_left(deadline))
    try:
        if not target.is_checked_peer(str(sock.getpeername()[0])):
            raise PeerMismatch(f"connected to {sock.getpeername()[0]}, which was not checked")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if endpoint.scheme == "https":
            sock.settimeout(_left(deadline))
            sock = _TLS.wrap_socket(sock, server_hostname=endpoint.host)
        return sock
    except BaseException:
        sock.close()
        raise


def _kept(target: Target) -> tuple[socket.socket, Destination] | None:
    """A kept connection to one of the checked addresses, if there is one."""
    endpoint = target.endpoint
    for address in target.addresses:
        dest = (endpoint.scheme, str(address), endpoint.port, endpoint.host)
        sock = _take_idle(dest)
        if sock is not None:
            return sock, dest
    return None


def _open(target: Target, deadline: float) -> tuple[socket.socket, Destination]:
    """A new connection to one of the checked addresses (the first address that answers)."""
    endpoint = target.endpoint
    if not target.addresses:
        raise ConnectionError(f"{endpoint.host} does not resolve")
    failure: Exception = ConnectionError(f"no address of {endpoint.host} answered")
    for address in target.addresses:
        dest = (endpoint.scheme, str(address), endpoint.port, endpoint.host)
        try:
            return _connect(target, address, deadline), dest
        except (OSError, PeerMismatch) as exc:
            failure = exc
            _left(deadline)
    raise failure


# -- the exchange ---------------------------------------------------------------------------------
def request_head(target: Target, body_length: int, headers: dict[str, str]) -> bytes:
    """The request line and headers; ValueError for a header Metro must not send."""
    endpoint = target.endpoint
    lines = [f"POST {endpoint.target} HTTP/1.1", f"Host: {endpoint.host_header}", f"Content-Length: {body_length}"]
    for name, value in headers.items():
        if not _TOKEN.match(name) or not _VALUE.match(value):
            raise ValueError(f"refusing to send the header {name[:40]!r}")
        if name.lower() not in _OWN_HEADERS:
            lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _send(sock: socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        sock.settimeout(_left(deadline))
        sent = sock.send(view[:256 * 1024])
        view = view[sent:]


def _recv(sock: socket.socket, deadline: float) -> bytes:
    sock.settimeout(_left(deadline))
    return sock.recv(16 * 1024)


def _header_values(head: bytes) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            key = name.strip().lower().decode("latin-1")
            values[key] = (values[key] + "," if key in values else "") + value.strip().decode("latin-1")
    return values


def _body_length(status: int, head: bytes) -> int | None:
    """The body's length in bytes, or None when only closing the connection ends it."""
    if status in (204, 304):
        return 0
    values = _header_values(head)
    if "transfer-encoding" in values or "content-length" not in values:
        return None
    length = values["content-length"].strip()
    if not (length.isascii() and length.isdigit()):  # int() fails on "²"
        return None
    if "close" in values.get("connection", "").lower():
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
        ``MAX_HEAD_BYTES``, ConnectionError for an answer that is not HTTP/1.x."""
        if self.status is None:
            newline = self.buffer.find(b"\n", max(self.start, self.scanned))
            if newline >= 0:
                match = _STATUS.match(self.buffer, self.start, newline + 1)
                if match is None:
                    raise ConnectionError("the answer is not HTTP/1.x")
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


def _more(sock: socket.socket, head: _Head, deadline: float) -> bool:
    """Read the next bytes of the answer; False when they stop (deadline, error, close) after a status line."""
    try:
        chunk = _recv(sock, deadline)
    except (PushTimeout, OSError):
        if head.status is not None:
            return False
        raise
    if not chunk:
        if head.status is not None:
            return False
        raise ConnectionError("the connection closed before an answer")
    head.buffer += chunk
    return True


def _read_answer(sock: socket.socket, deadline: float) -> Answer:
    """The final status; the connection is reusable when its answer was read to the end."""
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
        if head.status < 200 or not lines.startswith(b"HTTP/1.1"):
            return Answer(head.status, False)
        return Answer(head.status, _read_body(sock, _body_length(head.status, lines), rest, deadline))


def _read_body(sock: socket.socket, length: int | None, rest: bytes, deadline: float) -> bool:
    """Read a short body to its end; whether the connection may be reused."""
    if length is None or length > MAX_BODY_BYTES or len(rest) > length:
        return False
    got = len(rest)
    try:
        while got < length:
            chunk = _recv(sock, deadline)
            if not chunk:
                return False
            got += len(chunk)
    except (PushTimeout, OSError):
        return False
    return got == length


def post(target: Target, body: bytes, headers: dict[str, str], deadline: float) -> int:
    """POST ``body`` to ``target``; the final HTTP status. Raises on a timeout or a connection failure.

    A kept connection the server closed meanwhile fails before any byte of an answer: the request then
    goes once more, on a new connection (push is at-least-once, so a repeat is allowed).
    """
    head = request_head(target, len(body), headers)
    kept = _kept(target)
    if kept is not None:
        try:
            return _exchange(kept, head, body, deadline)
        except ConnectionError:  # also a reset or a broken pipe
            _left(deadline)
    return _exchange(_open(target, deadline), head, body, deadline)


def _exchange(conn: tuple[socket.socket, Destination], head: bytes, body: bytes, deadline: float) -> int:
    sock, dest = conn
    answer: Answer | None = None
    try:
        if len(body) <= 64 * 1024:
            _send(sock, head + body, deadline)
        else:
            _send(sock, head, deadline)
            _send(sock, body, deadline)
        answer = _read_answer(sock, deadline)
        return answer.status
    finally:
        if answer is not None and answer.reusable:
            sock.settimeout(None)
            _keep(dest, sock)
        else:
            sock.close()
