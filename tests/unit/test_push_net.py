"""The checked HTTP client (store/http_client.py) as push uses it, against raw servers on 127.0.0.1: a total
deadline, a bounded answer, connections only to checked addresses, TLS with the host name (SNI and
certificate)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from chalicelib.config import Config
from chalicelib.core.access.endpoints import Target, validate_push_endpoint
from chalicelib.delivery.push_request import http_poster
from chalicelib.store import http_client
from chalicelib.store.http_answer import Deadline, DeadlinePassed
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.workers import Workers

Behaviour = Callable[[socket.socket], None]
http_post = http_poster(EndpointResolver(Config(), Workers()))


@dataclass
class Server:
    """Accepts connections on 127.0.0.1 and runs ``behaviour`` on each after reading one request."""

    behaviour: Behaviour
    tls: ssl.SSLContext | None = None
    requests: list[bytes] = field(default_factory=list)
    sni: list[str | None] = field(default_factory=list)
    peers: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        if self.tls is not None:
            self.tls.sni_callback = lambda sock, name, ctx: self.sni.append(name)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.listener.accept()
            except OSError:
                return
            self.peers.add(peer[1])
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            while True:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), b"0"))
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests.append(head)
                self.behaviour(conn)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def servers() -> Iterator[Callable[..., Server]]:
    made: list[Server] = []

    def make(behaviour: Behaviour, tls: ssl.SSLContext | None = None) -> Server:
        made.append(Server(behaviour, tls))
        return made[-1]

    yield make
    for server in made:
        server.close()


def answer(status: bytes = b"204 No Content", rest: bytes = b"Content-Length: 0\r\n\r\n") -> Behaviour:
    """Answer each request with ``status`` and ``rest`` (headers, blank line, body)."""
    def run(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 " + status + b"\r\n" + rest)

    return run


def drip(prefix: bytes, count: int = 40, every: float = 0.2) -> Behaviour:
    """Send ``prefix`` at once, then one byte every ``every`` seconds (``count`` of them), then hang up."""
    def run(conn: socket.socket) -> None:
        conn.sendall(prefix)
        for _ in range(count):
            time.sleep(every)
            conn.sendall(b"x")
        raise OSError("done")

    return run


def timed_post(url: str, timeout: float) -> tuple[int | None, float]:
    start = time.monotonic()
    status = http_post(url, b"{}", {"Content-Type": "application/json"}, timeout)
    return status, time.monotonic() - start


def pinned(url: str, *addresses: str) -> Target:
    """A checked target for ``url`` whose host 'resolves' to ``addresses`` (local rules)."""
    return validate_push_endpoint(url, deployed=False, allow_list=[], resolve=lambda host: list(addresses))


# -- a total deadline ---------------------------------------------------------------------------------------
def test_a_dripping_status_line_is_cut_off_at_the_deadline(servers: Callable[..., Server]) -> None:
    server = servers(drip(b"HTTP/1.1 2"))  # each byte within the read timeout: urllib3 waited ~8 s
    status, elapsed = timed_post(f"http://127.0.0.1:{server.port}/drip", 1.0)
    assert status is None
    assert elapsed < 2.0


def test_the_deadline_counts_on_its_own_clock(servers: Callable[..., Server]) -> None:
    """The clock is injected: one that moves a second per reading ends a 3 s deadline after three readings
    (connect, send, one receive), however fast the server drips."""
    server = servers(drip(b"HTTP/1.1 2", every=0.01))
    readings: list[float] = []

    def stepping() -> float:
        readings.append(100.0 + len(readings))
        return readings[-1]

    with pytest.raises(DeadlinePassed):
        http_client.post(pinned(f"http://127.0.0.1:{server.port}/", "127.0.0.1"), b"x", {},
                         Deadline.after(3.0, stepping))
    assert len(readings) == 4  # the deadline's start, then three readings that left 2, 1 and 0 seconds


def test_a_dripping_body_is_not_waited_for(servers: Callable[..., Server]) -> None:
    server = servers(drip(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"))
    status, elapsed = timed_post(f"http://127.0.0.1:{server.port}/body", 1.0)
    assert status == 200
    assert elapsed < 0.9  # the status is the answer; the body is not drained
    short = servers(drip(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"))  # short, but dripping
    status, elapsed = timed_post(f"http://127.0.0.1:{short.port}/short", 1.0)
    assert status == 200 and elapsed < 2.0


def test_long_or_unframed_answers_close_the_connection(servers: Callable[..., Server]) -> None:
    kept = servers(answer(b"200 OK", b"Content-Length: 5\r\n\r\nhello"))
    url = f"http://127.0.0.1:{kept.port}/kept"
    assert [http_post(url, b"x", {}, 2.0) for _ in range(3)] == [200, 200, 200]
    assert len(kept.peers) == 1  # a short body read to its end: the connection is reused
    long_body = b"Content-Length: 10000\r\n\r\n" + b"y" * 10000
    for rest in (long_body, b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"Connection: close\r\n\r\n",
                 b"Content-Length: \xb2\r\n\r\n"):  # a length int() cannot read (a digit to str.isdigit)
        server = servers(answer(b"200 OK", rest))
        url = f"http://127.0.0.1:{server.port}/closed"
        assert [http_post(url, b"x", {}, 2.0) for _ in range(2)] == [200, 200]
        assert len(server.peers) == 2


def test_a_kept_connection_the_server_dropped_is_retried_once_on_a_new_one(servers: Callable[..., Server]) -> None:
    """A server that keeps a connection open but hangs up on its next request (an idle timeout racing the
    request): the push is not lost to that race, it goes again on a fresh connection."""
    answered: set[int] = set()  # client ports of the connections that got their one answer

    def first_only(conn: socket.socket) -> None:
        port = int(conn.getpeername()[1])
        if port in answered:
            raise OSError("idle connection closed")  # hang up without an answer
        answered.add(port)
        conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    server = servers(first_only)
    url = f"http://127.0.0.1:{server.port}/drops-idle"
    assert [http_post(url, b"x", {}, 2.0) for _ in range(3)] == [204, 204, 204]
    assert len(server.requests) == 5 and len(server.peers) == 3  # each kept connection failed once, then a new one


def test_an_interim_100_is_skipped(servers: Callable[..., Server]) -> None:
    server = servers(answer(b"100 Continue\r\n\r\nHTTP/1.1 201 Created", b"Content-Length: 0\r\n\r\n"))
    assert http_post(f"http://127.0.0.1:{server.port}/", b"x", {}, 2.0) == 201


# -- only checked addresses ---------------------------------------------------------------------------------
def test_the_connection_goes_to_the_checked_address_with_the_host_name(servers: Callable[..., Server]) -> None:
    server = servers(answer())
    target = pinned(f"http://rebind.test:{server.port}/p?q=1#frag", "127.0.0.1")
    assert http_client.post(target, b"x", {}, Deadline.after(2.0)) == 204  # rebind.test is never resolved again
    request_line, *headers = server.requests[0].decode().split("\r\n")
    assert request_line == "POST /p?q=1 HTTP/1.1"
    assert f"Host: rebind.test:{server.port}" in headers


def test_a_peer_that_was_not_checked_is_refused(servers: Callable[..., Server],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    server = servers(answer())
    real = socket.create_connection

    def elsewhere(address: tuple[str, int], timeout: float) -> socket.socket:
        return real(("127.0.0.1", server.port), timeout)  # as if the name had been resolved again

    monkeypatch.setattr(socket, "create_connection", elsewhere)
    assert http_client.post(pinned(f"http://a.test:{server.port}/", "127.0.0.1"), b"x", {}, Deadline.after(2)) == 204
    with pytest.raises(http_client.PeerMismatch):
        http_client.post(pinned(f"http://b.test:{server.port}/", "127.0.0.2"), b"x", {}, Deadline.after(2))
    assert len(server.requests) == 1


def test_unsafe_headers_are_never_written() -> None:
    target = pinned("http://a.test/", "127.0.0.1")
    for name, value in (("X-A", "a\r\nb"), ("X-A", "a\nb"), ("X-A", "a\x00"), ("Bad Name", "v"), ("X:A", "v")):
        with pytest.raises(ValueError):
            http_client.request_head(target, 1, {name: value})
    head = http_client.request_head(target, 1, {"Host": "evil", "Content-Length": "99", "X-Ok": "v\u00e9"})
    assert b"evil" not in head and b"99" not in head and b"X-Ok: v\xe9" in head


# -- TLS: SNI and the certificate for the host name, connected to the checked address ------------------------
def certificate(name: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=36500))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def test_tls_uses_the_host_name_while_connecting_to_the_checked_address(
    servers: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, tmp_path: object,
) -> None:
    cert_pem, key_pem = certificate("push.test")
    from pathlib import Path

    folder = Path(str(tmp_path))
    (folder / "cert.pem").write_bytes(cert_pem)
    (folder / "key.pem").write_bytes(key_pem)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    server = servers(answer(), server_tls)
    monkeypatch.setattr(http_client, "_TLS", ssl.create_default_context(cadata=cert_pem.decode()))
    target = pinned(f"https://push.test:{server.port}/x", "127.0.0.1")
    assert http_client.post(target, b"x", {}, Deadline.after(5)) == 204
    assert server.sni == ["push.test"]
    assert f"Host: push.test:{server.port}" in server.requests[0].decode()
    with pytest.raises(ssl.SSLCertVerificationError):  # the certificate is not for other.test
        http_client.post(pinned(f"https://other.test:{server.port}/x", "127.0.0.1"), b"x", {}, Deadline.after(5))
    assert ipaddress.ip_address("127.0.0.1") in target.addresses
