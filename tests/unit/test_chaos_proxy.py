"""The fault run's partition proxy (bench/chaos/proxy.py) against small local upstreams: an echo server and a
keep-alive HTTP server."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.chaos.proxy import PARTITIONS, PartitionProxy, describe

pytestmark = pytest.mark.unit

WAIT = 5.0


def wait_for(check: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


class Echo:
    """A TCP server that records what it receives and sends it back; ``ended`` is set when a client's stream ends."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received = bytearray()
        self.ended = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                    if not data:
                        break
                    self.received += data
                    conn.sendall(data)
                except OSError:
                    break
        self.ended.set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    peers: list[tuple[str, int]] = []  # noqa: RUF012 - the server's record of who asked

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.peers.append(self.client_address)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[::-1])

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.server.close()


@pytest.fixture
def proxy(echo: Echo) -> Iterator[PartitionProxy]:
    p = PartitionProxy(echo.port).start()
    yield p
    p.stop()


@pytest.fixture
def http_proxy() -> Iterator[PartitionProxy]:
    Handler.peers = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    p = PartitionProxy(server.server_address[1]).start()
    yield p
    p.stop()
    server.shutdown()
    server.server_close()


def connect(p: PartitionProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", p.port), timeout=WAIT)


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "connection closed early"
        data += chunk
    return data


def nothing_to_read(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    finally:
        sock.settimeout(WAIT)
    return False


def test_pass_forwards_both_ways(proxy: PartitionProxy) -> None:
    assert proxy.url == f"http://127.0.0.1:{proxy.port}"
    with connect(proxy) as sock:
        sock.sendall(b"hello")
        assert recv_exactly(sock, 5) == b"hello"


def test_blackhole_up_holds_requests_until_healed(proxy: PartitionProxy, echo: Echo) -> None:
    with connect(proxy) as sock:
        sock.sendall(b"one")
        assert recv_exactly(sock, 3) == b"one"
        proxy.set("blackhole", "up")
        sock.sendall(b"two")
        wait_for(lambda: proxy.stats()["held"] == 3)
        assert bytes(echo.received) == b"one"
        assert nothing_to_read(sock)
        proxy.set("pass")
        assert recv_exactly(sock, 3) == b"two"
        assert bytes(echo.received) == b"onetwo"
        wait_for(lambda: proxy.stats()["held"] == 0)


def test_blackhole_holds_new_connections(proxy: PartitionProxy, echo: Echo) -> None:
    proxy.set("blackhole", "both")
    with connect(proxy) as sock:
        sock.sendall(b"new")
        wait_for(lambda: proxy.stats()["held"] == 3)
        assert not echo.received
        proxy.set("pass")
        assert recv_exactly(sock, 3) == b"new"


def test_blackhole_down_holds_answers(proxy: PartitionProxy, echo: Echo) -> None:
    proxy.set("blackhole", "down")
    with connect(proxy) as sock:
        sock.sendall(b"ping")
        wait_for(lambda: bytes(echo.received) == b"ping")
        wait_for(lambda: proxy.stats()["held"] == 4)
        assert nothing_to_read(sock)
        proxy.set("pass")
        assert recv_exactly(sock, 4) == b"ping"


def test_a_peer_that_gives_up_during_a_blackhole_closes_the_other_side(proxy: PartitionProxy, echo: Echo) -> None:
    proxy.set("blackhole", "down")
    sock = connect(proxy)
    sock.sendall(b"ping")
    wait_for(lambda: proxy.stats()["held"] == 4)
    sock.close()
    assert echo.ended.wait(WAIT)
    wait_for(lambda: proxy.stats()["open"] == 0)
    assert proxy.stats()["held"] == 0


def test_keep_alive_http_request_held_then_answered_on_the_same_connection(http_proxy: PartitionProxy) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=WAIT)
    conn.request("POST", "/", body=b"abc")
    assert conn.getresponse().read() == b"cba"
    http_proxy.set("blackhole", "up")
    conn.request("POST", "/", body=b"xyz")
    wait_for(lambda: http_proxy.stats()["held"] > 0)
    assert len(Handler.peers) == 1
    http_proxy.set("pass")
    assert conn.getresponse().read() == b"zyx"
    assert len(Handler.peers) == 2
    assert Handler.peers[0] == Handler.peers[1]
    conn.close()


def test_delay_delays_and_keeps_order(proxy: PartitionProxy) -> None:
    delay = 0.1
    proxy.set("delay", "both", delay)
    chunks = [bytes([65 + i]) * (1 + i * 997) for i in range(20)]
    expected = b"".join(chunks)
    with connect(proxy) as sock:
        started = time.monotonic()
        for chunk in chunks:
            sock.sendall(chunk)
        first = sock.recv(1)
        elapsed = time.monotonic() - started
        assert first + recv_exactly(sock, len(expected) - 1) == expected
    assert elapsed >= 2 * delay  # out after `delay`, back after another


def test_reset_resets_open_and_new_connections(proxy: PartitionProxy) -> None:
    with connect(proxy) as sock:
        sock.sendall(b"hi")
        assert recv_exactly(sock, 2) == b"hi"
        proxy.set("reset")
        with pytest.raises(ConnectionResetError):
            sock.recv(1)
    with pytest.raises(ConnectionResetError), connect(proxy) as sock:  # on connect or on the first read
        sock.recv(1)
    assert proxy.stats()["reset"] == 2
    proxy.set("pass")
    with connect(proxy) as sock:
        sock.sendall(b"back")
        assert recv_exactly(sock, 4) == b"back"


def test_stats_count(proxy: PartitionProxy) -> None:
    with connect(proxy) as first, connect(proxy) as second:
        first.sendall(b"12345")
        assert recv_exactly(first, 5) == b"12345"
        second.sendall(b"abc")
        assert recv_exactly(second, 3) == b"abc"
        wait_for(lambda: proxy.stats()["bytes_down"] == 8)  # counted once the proxy's send returns
        stats = proxy.stats()
        assert (stats["accepted"], stats["open"], stats["bytes_up"], stats["held"]) == (2, 2, 8, 0)
    wait_for(lambda: proxy.stats()["open"] == 0)
    proxy.set("delay", "up", 1.5)
    stats = proxy.stats()
    assert (stats["mode"], stats["direction"], stats["delay"], stats["label"]) == ("delay", "up", 1.5, "delay up 1.5s")


def test_many_concurrent_keep_alive_connections(http_proxy: PartitionProxy) -> None:
    body = bytes(range(256)) * 256  # 64 KiB

    def client(n: int) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=30)
        for _ in range(10):
            conn.request("POST", "/", body=body)
            assert conn.getresponse().read() == body[::-1]
        conn.close()
        return n

    with ThreadPoolExecutor(50) as pool:
        assert sorted(pool.map(client, range(50))) == list(range(50))
    stats = http_proxy.stats()
    assert stats["accepted"] == 50
    assert stats["bytes_down"] >= 500 * len(body)
    assert stats["failed"] == 0


def test_labels_and_bad_faults() -> None:
    assert describe("pass") == "pass"
    assert describe("reset", "both") == "reset"
    assert describe("blackhole", "up") == "blackhole up"
    assert describe("delay", "both", 2.0) == "delay both 2s"
    assert ("blackhole", "both") in PARTITIONS
    assert all(mode in ("blackhole", "delay", "reset") for mode, _ in PARTITIONS)
    proxy = PartitionProxy(1)
    with pytest.raises(ValueError, match="bad fault"):
        proxy.set("drop")
    proxy.stop()
