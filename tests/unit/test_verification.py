""":verifyPushEndpoint's fetch (store/verification.py, on the checked HTTP client) against raw servers on
127.0.0.1: one total deadline counted on an injected clock, a bounded answer, and never Metro's own ports. No
test waits on the wall clock: the trickling server sends a byte each time the client reads the clock."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from chalicelib.config import Config
from chalicelib.core.errors import InvalidArgument
from chalicelib.store import http_answer, verification
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.verification import fetch_verification_hash
from chalicelib.store.workers import Workers

HASH = "3b8f1d7c0e2a4b6d9f1e3a5c7b9d0f2e"
GUARD = 10.0  # how long a server thread waits for the test at most (never reached when the test passes)


def local_resolver(*own_ports: int) -> EndpointResolver:
    config = Config(deployed=False, push_strict=False, push_allow_list=(), endpoint_url=None, own_ports=own_ports)
    return EndpointResolver(config, Workers())


@dataclass
class Server:
    """Reads one request on each connection; then ``send(conn)``."""

    send: Callable[[socket.socket], None]
    requests: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            self.requests.append(data)
            with contextlib.suppress(OSError):  # the client may hang up first
                self.send(conn)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/push"


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket], None]], Server]]:
    made: list[Server] = []

    def make(send: Callable[[socket.socket], None]) -> Server:
        made.append(Server(send))
        return made[-1]

    yield make
    for server in made:
        server.listener.close()


def answer(data: bytes) -> Callable[[socket.socket], None]:
    return lambda conn: conn.sendall(data)


class SteppingClock:
    """A monotonic clock that moves one second each time it is read, and lets the server send one byte."""

    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0
        self.gate = threading.Semaphore(0)

    def __call__(self) -> float:
        self.now += 1.0
        self.reads += 1
        self.gate.release()
        return self.now

    def trickle(self, data: bytes) -> Callable[[socket.socket], None]:
        def send(conn: socket.socket) -> None:
            for i in range(len(data)):
                if not self.gate.acquire(timeout=GUARD):
                    return
                conn.sendall(data[i:i + 1])

        return send


def test_an_answer_trickled_past_the_deadline_is_no_answer(serve: Callable[..., Server]) -> None:
    """Each byte arrives well within a per-socket timeout, so before there was no end to such an answer."""
    clock = SteppingClock()
    body = HASH.encode()
    server = serve(clock.trickle(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)))
    assert fetch_verification_hash(local_resolver(), server.url, timeout=5.0, clock=clock) == (0, "no answer within 5s")
    assert clock.reads <= 8  # the deadline is 5 clock seconds away; each read of the clock is one second
    assert len(server.requests) == 1


def test_the_same_answer_in_time_is_read(serve: Callable[..., Server]) -> None:
    body = HASH.encode()
    server = serve(answer(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)))
    assert fetch_verification_hash(local_resolver(), server.url) == (200, HASH)
    request_line = server.requests[0].split(b"\r\n")[0]
    assert request_line == b"GET /ams_verification_hash HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}".encode() in server.requests[0]


def test_a_head_past_the_bound_is_refused(serve: Callable[..., Server]) -> None:
    """40 headers of 1,000 bytes: http.client read them all (it allows 100 lines of 64 KiB each)."""
    headers = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000) for i in range(40))
    server = serve(answer(b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: 32\r\n\r\n" + HASH.encode()))
    status, reason = fetch_verification_hash(local_resolver(), server.url)
    assert (status, reason) == (0, f"the answer's head is longer than {http_answer.MAX_HEAD_BYTES} bytes")


def test_a_long_body_is_cut_at_the_bound_without_reading_the_rest(serve: Callable[..., Server]) -> None:
    release = threading.Event()

    def endless(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n" + b"z" * 8192)
        release.wait(GUARD)  # the rest never comes: the client must not wait for it

    server = serve(endless)
    try:
        status, body = fetch_verification_hash(local_resolver(), server.url, timeout=GUARD * 3)
    finally:
        release.set()
    assert (status, body) == (200, "z" * verification.MAX_ANSWER_BYTES)


@pytest.mark.parametrize(("raw", "expected"), [
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + HASH[:16].encode() + b"\r\n10;x=y\r\n"
     + HASH[16:].encode() + b"\r\n0\r\n\r\n", (200, HASH)),
    (b"HTTP/1.0 200 OK\r\n\r\n" + HASH.encode() + b"\n", (200, HASH)),  # ended by closing the connection
    (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", (404, "")),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", (0, "the answer is not HTTP/1.x")),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", (0, "the answer's chunked body is malformed")),
])
def test_answer_framings(serve: Callable[..., Server], raw: bytes, expected: tuple[int, str]) -> None:
    assert fetch_verification_hash(local_resolver(), serve(answer(raw)).url) == expected


def test_metros_own_ports_are_never_asked(serve: Callable[..., Server]) -> None:
    server = serve(answer(b"HTTP/1.1 200 OK\r\nContent-Length: 32\r\n\r\n" + HASH.encode()))
    with pytest.raises(InvalidArgument, match="may never use it"):
        fetch_verification_hash(local_resolver(server.port), server.url)
    assert fetch_verification_hash(local_resolver(), server.url) == (200, HASH)
    assert len(server.requests) == 1  # the only request is the one allowed
