"""The checked HTTP client: Metro's only outgoing HTTP, for push delivery (:func:`post`) and AMS's endpoint
verification (:func:`get`), to a :class:`~chalicelib.core.access.endpoints.Target` that store/resolver.py checked.

It connects only to the addresses that were checked (never resolving again): for https the TLS handshake
still sends the host name (SNI) and verifies the certificate for it, and ``Host`` is the URL's host. After
connecting, the peer address is compared with the checked addresses once more.

One :class:`~chalicelib.store.http_answer.Deadline` covers the whole exchange: every socket operation
(connect, TLS handshake, each send, each receive) gets the time left as its timeout, counted on the
deadline's clock. Answers are bounded (store/http_answer.py): at most ``MAX_HEAD_BYTES`` of status line
and headers, and a body read only within its bound. Connections whose answer was read completely are kept
for reuse (keep-alive), a bounded number per destination; a verification GET closes its connection.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
from collections import OrderedDict

from urllib3.util.wait import wait_for_read

from chalicelib.core.access.endpoints import Address, Target
from chalicelib.store.http_answer import Deadline, read_answer

MAX_DESTINATIONS = 64
MAX_IDLE_PER_DESTINATION = 16
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_VALUE = re.compile(r"^[\t\x20-\x7e\x80-\xff]*\Z")
_OWN_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "upgrade",
                "trailer", "expect"}

Destination = tuple[str, str, int, str]  # (scheme, address, port, host name)


class PeerMismatch(ConnectionError):
    """The socket is connected to an address that was not checked."""


def is_token(name: str) -> bool:
    """Whether ``name`` is an HTTP token (RFC 9110), as a header name must be."""
    return bool(_TOKEN.match(name))


# -- connections ----------------------------------------------------------------------------------
_IDLE: OrderedDict[Destination, list[socket.socket]] = OrderedDict()
_IDLE_LOCK = threading.Lock()
_TLS = ssl.create_default_context()


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


def _connect(target: Target, address: Address, deadline: Deadline) -> socket.socket:
    endpoint = target.endpoint
    sock = socket.create_connection((str(address), endpoint.port), timeout=deadline.left())
    try:
        if not target.is_checked_peer(str(sock.getpeername()[0])):
            raise PeerMismatch(f"connected to {sock.getpeername()[0]}, which was not checked")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if endpoint.scheme == "https":
            sock.settimeout(deadline.left())  # the ssl module counts this once for the whole handshake
            sock = _TLS.wrap_socket(sock, server_hostname=endpoint.host)
        return sock
    except BaseException:
        sock.close()
        raise


def _destination(target: Target, address: Address) -> Destination:
    endpoint = target.endpoint
    return endpoint.scheme, str(address), endpoint.port, endpoint.host


def _kept(target: Target) -> tuple[socket.socket, Destination] | None:
    """A kept connection to one of the checked addresses, if there is one."""
    for address in target.addresses:
        dest = _destination(target, address)
        sock = _take_idle(dest)
        if sock is not None:
            return sock, dest
    return None


def _open(target: Target, deadline: Deadline) -> tuple[socket.socket, Destination]:
    """A new connection to one of the checked addresses (the first address that answers)."""
    endpoint = target.endpoint
    if not target.addresses:
        raise ConnectionError(f"{endpoint.host} does not resolve")
    failure: Exception = ConnectionError(f"no address of {endpoint.host} answered")
    for address in target.addresses:
        try:
            return _connect(target, address, deadline), _destination(target, address)
        except OSError as exc:  # PeerMismatch included
            failure = exc
            deadline.left()
    raise failure


# -- the exchange ---------------------------------------------------------------------------------
def request_head(target: Target, body_length: int | None, headers: dict[str, str], *, method: str = "POST",
                 close: bool = False) -> bytes:
    """The request line and headers; ValueError for a header Metro must not send."""
    endpoint = target.endpoint
    lines = [f"{method} {endpoint.target} HTTP/1.1", f"Host: {endpoint.host_header}"]
    if body_length is not None:
        lines.append(f"Content-Length: {body_length}")
    for name, value in headers.items():
        if not is_token(name) or not _VALUE.match(value):
            raise ValueError(f"refusing to send the header {name[:40]!r}")
        if name.lower() not in _OWN_HEADERS:
            lines.append(f"{name}: {value}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _send(sock: socket.socket, data: bytes, deadline: Deadline) -> None:
    view = memoryview(data)
    while view:
        sock.settimeout(deadline.left())
        sent = sock.send(view[:256 * 1024])
        view = view[sent:]


def post(target: Target, body: bytes, headers: dict[str, str], deadline: Deadline) -> int:
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
            deadline.left()
    return _exchange(_open(target, deadline), head, body, deadline)


def get(target: Target, headers: dict[str, str], deadline: Deadline, max_body: int) -> tuple[int, bytes]:
    """GET ``target`` on a connection of its own, closed after the answer: the status and at most ``max_body``
    bytes of the body. Raises on a timeout, a connection failure or an answer Metro does not read."""
    sock, _ = _open(target, deadline)
    with sock:
        _send(sock, request_head(target, None, headers, method="GET", close=True), deadline)
        answer = read_answer(sock, deadline, max_body)
    return answer.status, answer.body


def _exchange(conn: tuple[socket.socket, Destination], head: bytes, body: bytes, deadline: Deadline) -> int:
    sock, dest = conn
    reusable = False
    try:
        if len(body) <= 64 * 1024:
            _send(sock, head + body, deadline)
        else:
            _send(sock, head, deadline)
            _send(sock, body, deadline)
        answer = read_answer(sock, deadline)
        reusable = answer.reusable
        return answer.status
    finally:
        if reusable:
            sock.settimeout(None)
            _keep(dest, sock)
        else:
            sock.close()
