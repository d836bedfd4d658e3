"""The checked HTTP client's bound on an answer's head (store/http_answer.py): status line and headers together, interim
answers included, at most ``MAX_HEAD_BYTES``; a longer head is a failed push (a nack), found without
reading further. Servers are raw listeners on 127.0.0.1; nothing here waits on the wall clock."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from chalicelib.config import Config
from chalicelib.core.access.endpoints import Target, validate_push_endpoint
from chalicelib.delivery.push_request import http_poster
from chalicelib.store import http_answer, http_client
from chalicelib.store.http_answer import Deadline
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.workers import Workers

http_post = http_poster(EndpointResolver(Config(), Workers()))
LONG = 60.0  # a deadline no test reaches: each one ends on what the server sends, or on its hanging up


@dataclass
class Answering:
    """Reads one request on each connection, sends ``answer`` and hangs up (or holds the connection open
    until ``release`` when ``hold``)."""

    answer: bytes
    hold: bool = False
    release: threading.Event = field(default_factory=threading.Event)

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
                data += conn.recv(65536)
            try:
                conn.sendall(self.answer)
            except OSError:
                return
            if self.hold:
                self.release.wait(LONG)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def close(self) -> None:
        self.release.set()
        self.listener.close()


@pytest.fixture
def serve() -> Iterator[type[Answering]]:
    made: list[Answering] = []

    class Tracked(Answering):
        def __post_init__(self) -> None:
            super().__post_init__()
            made.append(self)

    yield Tracked
    for server in made:
        server.close()


def target(url: str) -> Target:
    return validate_push_endpoint(url, deployed=False, allow_list=[], resolve=lambda host: ["127.0.0.1"])


def test_a_status_line_longer_than_the_head_bound_is_a_failed_push(serve: type[Answering]) -> None:
    # The status line ends after the bound: before, it was read to its end and its 200 acknowledged the push.
    server = serve(b"HTTP/1.1 200 " + b"k" * (2 * http_answer.MAX_HEAD_BYTES) + b"\r\nContent-Length: 0\r\n\r\n")
    assert http_post(server.url, b"{}", {}, LONG) is None
    with pytest.raises(http_answer.HeadTooLong):
        http_client.post(target(server.url), b"{}", {}, Deadline.after(LONG))


def test_headers_past_the_bound_are_a_failed_push_even_after_a_good_status(serve: type[Answering]) -> None:
    headers = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 200) for i in range(100))  # about 21 KiB
    server = serve(b"HTTP/1.1 204 No Content\r\n" + headers + b"Content-Length: 0\r\n\r\n")
    assert http_post(server.url, b"{}", {}, LONG) is None


def test_interim_answers_count_towards_the_bound(serve: type[Answering]) -> None:
    interim = b"HTTP/1.1 100 Continue\r\nX-Pad: " + b"c" * 1000 + b"\r\n\r\n"
    server = serve(interim * 20 + b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
    assert http_post(server.url, b"{}", {}, LONG) is None


def test_a_server_that_never_ends_a_line_is_cut_off_at_the_bound(serve: type[Answering]) -> None:
    """No newline at all, and the connection held open: the push fails as soon as the bound is passed, not at
    the deadline (before, Metro kept reading, up to megabytes, until the ack deadline)."""
    server = serve(b"x" * (http_answer.MAX_HEAD_BYTES + 1), hold=True)
    with pytest.raises(http_answer.HeadTooLong):
        http_client.post(target(server.url), b"{}", {}, Deadline.after(LONG))


def test_answers_within_the_bound_are_read(serve: type[Answering]) -> None:
    padding = b"X-Pad: " + b"p" * (http_answer.MAX_HEAD_BYTES - 200) + b"\r\n"
    cases = [
        (b"HTTP/1.1 201 Created\r\n" + padding + b"Content-Length: 0\r\n\r\n", 201),
        # a status line without a reason phrase, with more in the same read (was taken for a malformed answer)
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", 200),
        (b"HTTP/1.0 503 Busy\r\n\r\n", 503),
    ]
    for answer, status in cases:
        assert http_post(serve(answer).url, b"{}", {}, LONG) == status


def test_the_head_reader_stops_reading_at_the_bound() -> None:
    """However the bytes arrive, the reader asks for no more once the bound is passed: its buffer stays within
    the bound and one read."""
    class Endless:
        def __init__(self) -> None:
            self.reads = 0

        def settimeout(self, timeout: float | None) -> None:
            pass

        def recv(self, size: int) -> bytes:
            self.reads += 1
            assert self.reads <= 64, "read 1 MiB of an answer's head"
            return b"y" * size

    sock = Endless()
    with pytest.raises(http_answer.HeadTooLong):
        http_answer.read_answer(sock, Deadline.after(LONG))  # type: ignore[arg-type]
    assert sock.reads * 16 * 1024 <= 2 * http_answer.MAX_HEAD_BYTES


def test_a_long_head_on_a_kept_connection_is_not_sent_again() -> None:
    """A kept connection that fails before any answer is retried once on a new one; a head past the bound is an
    answer, and a bad one: the push fails without a second request."""
    answers = [b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
               b"HTTP/1.1 200 OK\r\nX-Pad: " + b"p" * http_answer.MAX_HEAD_BYTES + b"\r\n\r\n"]
    requests: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])

    def serve_kept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):  # the client hangs up on an answer it does not read through
                serve_requests(conn)

    def serve_requests(conn: socket.socket) -> None:
        data = b""
        while True:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            request, _, data = data.partition(b"\r\n\r\n")
            requests.append(request)
            conn.sendall(answers[min(len(requests), len(answers)) - 1])

    threading.Thread(target=serve_kept, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{port}/kept"
        assert http_post(url, b"", {}, LONG) == 204
        assert http_post(url, b"", {}, LONG) is None
        assert len(requests) == 2
    finally:
        listener.close()
