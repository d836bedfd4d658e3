"""chalicelib/local/server.py: every answer of the local HTTP server leaves in one send on a socket with TCP_NODELAY,
so no answer on a kept-alive connection waits ~40 ms for the client's delayed acknowledgement (Nagle's algorithm
holds a second small send until the first is acknowledged). Checked on the server's sockets, not with a clock."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chalice.app import Chalice
from chalice.config import Config as ChaliceConfig
from chalice.local import LocalDevServer

from chalicelib.local.ams_server import ams_server
from chalicelib.local.server import RequestHandler
from chalicelib.local.tls import ensure_certificate


def small_app() -> Chalice:
    app = Chalice(app_name="one-send")

    @app.route("/")
    def index() -> dict[str, Any]:
        return {"hello": "world"}

    @app.route("/big")
    def big() -> dict[str, Any]:
        return {"data": "x" * 20_000}

    @app.route("/huge")
    def huge() -> dict[str, Any]:
        return {"data": "x" * 100_000}

    @app.route("/echo", methods=["POST"])
    def echo() -> dict[str, Any]:
        request = app.current_request
        assert request is not None
        return {"length": len(request.raw_body)}

    return app


def record_sends(monkeypatch: pytest.MonkeyPatch, port: int) -> list[tuple[int, int]]:
    """The sends made on the server's side of connections to ``port`` (TCP_NODELAY as set, bytes), recorded by
    wrapping socket.send and sendall (and SSLSocket.send, which the TLS server's writes go through)."""
    sends: list[tuple[int, int]] = []

    def wrap(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def recording(sock: socket.socket, data: Any, *args: Any) -> Any:
            if sock.getsockname()[1] == port:
                sends.append((sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), len(data)))
            return original(sock, data, *args)

        monkeypatch.setattr(cls, name, recording)

    wrap(socket.socket, "send")
    wrap(socket.socket, "sendall")
    wrap(ssl.SSLSocket, "send")
    return sends


@contextlib.contextmanager
def serving(server: LocalDevServer) -> Iterator[None]:
    thread = threading.Thread(target=server.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.server.shutdown()
        server.server.server_close()
        thread.join(5)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """A small Chalice app behind the local server's handler on a free port; yields the port and its sends."""
    server = LocalDevServer(small_app(), ChaliceConfig(chalice_stage="local"), "127.0.0.1", 0,
                            handler_cls=RequestHandler)
    port = server.server.server_address[1]
    sends = record_sends(monkeypatch, port)
    with serving(server):
        yield port, sends


def test_each_answer_on_a_kept_alive_connection_is_one_send(served: tuple[int, list[tuple[int, int]]]) -> None:
    port, sends = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for n in range(50):
        path, status = ("/", 200) if n % 5 else ("/no/such/route", 404)  # Chalice's answers and Metro's 404
        conn.request("GET", path)
        answer = conn.getresponse()
        answer.read()
        assert answer.status == status
        assert len(sends) == n + 1, f"request {n} answered in {len(sends) - n} sends"
    conn.request("POST", "/echo", body=b"x" * 5000, headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    assert answer.read() == b'{"length":5000}'
    conn.close()
    assert len(sends) == 51
    assert all(nodelay for nodelay, _ in sends)


def test_a_large_answer_never_waits_for_an_acknowledgement(served: tuple[int, list[tuple[int, int]]]) -> None:
    port, sends = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for path, size in (("/big", 20_000), ("/huge", 100_000)):
        conn.request("GET", path)
        assert len(conn.getresponse().read()) > size
    conn.close()
    assert len(sends) <= 3  # 20 KB in one send (within the buffer); 100 KB: the head, then the body
    assert all(nodelay for nodelay, _ in sends)  # so the body leaves without waiting for the head's ACK


def test_http_servers_own_refusal_is_one_send(served: tuple[int, list[tuple[int, int]]]) -> None:
    port, sends = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(b"TRACE / HTTP/1.1\r\nHost: x\r\n\r\n")  # no route serves TRACE: http.server's send_error
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 404") and b"NOT_FOUND" in answer
    assert len(sends) == 1


def test_100_continue_is_sent_before_the_body_arrives(served: tuple[int, list[tuple[int, int]]]) -> None:
    """The client waits for "100 Continue" before sending its body: the buffer must not hold it."""
    port, _ = served
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n"
                       b"Expect: 100-continue\r\n\r\n")
        assert client.recv(65536).startswith(b"HTTP/1.1 100 Continue")
        client.sendall(b"abc")
        answer = b""
        while b'{"length":3}' not in answer:
            chunk = client.recv(65536)
            assert chunk, answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")


def test_the_ams_https_endpoint_answers_in_one_send_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cert, key = ensure_certificate(tmp_path)
    server = ams_server(small_app(), "127.0.0.1", 0, cert, key)
    port = server.server.server_address[1]
    sends = record_sends(monkeypatch, port)
    with serving(server):
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                           context=ssl.create_default_context(cafile=str(cert)))
        for n in range(20):
            conn.request("GET", "/")
            assert conn.getresponse().read() == b'{"hello":"world"}'
            assert len(sends) == n + 1, f"request {n} answered in {len(sends) - n} writes"  # one TLS write each
        conn.close()
    assert all(nodelay for nodelay, _ in sends)
