"""gRPC on the REST port, as Google's emulator serves both on one port (``PUBSUB_EMULATOR_HOST=localhost:8085``).

The gRPC server (api/rpc/: google.pubsub.v1 and the IAM mixin, the standard health service and server
reflection) listens on a loopback port of its own. The REST listener looks at the first bytes of every
connection: an HTTP/2 connection opens with the fixed preface ``PRI * HTTP/2.0``, which no HTTP/1.1 request
starts with, so such a connection is handed to the gRPC server byte for byte, and any other is served as REST.
Where gRPC is not served (its packages are not installed, or METRO_GRPC=0), every gRPC call ends at once with
UNIMPLEMENTED and a message that says what to do, instead of hanging until its deadline.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger("metro.local")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
NOT_SERVED = (b"Metro does not serve gRPC on this endpoint: use the REST transport "
              b"(google-cloud-pubsub: transport='rest'), or run Metro with its gRPC extras (make run).")
_HTTP_1_1_REQUIRED = 0xD  # HTTP/2 error code


def opens_http2(connection: socket.socket, timeout: float = 10.0) -> bool:
    """Whether a connection starts with the HTTP/2 preface (peeked: the bytes stay for whoever reads next)."""
    connection.settimeout(timeout)
    try:
        seen = b""
        while len(seen) < len(PREFACE):
            seen = connection.recv(len(PREFACE), socket.MSG_PEEK)
            if not seen or not PREFACE.startswith(seen[:len(PREFACE)]):
                return False
            if len(seen) < len(PREFACE):
                time.sleep(0.005)  # the rest of the preface is on its way
        return True
    except OSError:
        return False
    finally:
        connection.settimeout(None)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def splice(client: socket.socket, port: int) -> None:
    """Carry one connection to the gRPC server's loopback port and back, until either side closes."""
    try:
        upstream = socket.create_connection(("127.0.0.1", port))
    except OSError:
        log.warning("the gRPC server is not reachable on port %d", port)
        refuse_http2(client)
        return
    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True, name="grpc-splice")
    back.start()
    _pump(client, upstream)
    back.join()
    upstream.close()


def _frame(kind: int, payload: bytes, flags: int = 0, stream: int = 0) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _literal(name: bytes, value: bytes) -> bytes:
    """One HPACK header field, literal and not indexed (RFC 7541 6.2.2), lengths under 127 or as integers."""
    def length(n: int) -> bytes:
        if n < 127:
            return bytes([n])
        out, n = bytearray([127]), n - 127
        while n >= 128:
            out.append((n % 128) | 128)
            n //= 128
        return bytes(out + bytearray([n]))
    return b"\x00" + length(len(name)) + name + length(len(value)) + value


UNIMPLEMENTED_TRAILERS = b"".join(_literal(k, v) for k, v in (
    (b":status", b"200"), (b"content-type", b"application/grpc"), (b"grpc-status", b"12"),
    (b"grpc-message", NOT_SERVED.replace(b" ", b"%20"))))


def refuse_http2(client: socket.socket, idle_seconds: float = 30.0) -> None:
    """Speak just enough HTTP/2 to end every call at once with UNIMPLEMENTED (which clients do not retry) and
    a message that names the fix: acknowledge the client's settings, answer each request's HEADERS with
    trailers only, and close after a quiet ``idle_seconds``."""
    try:
        client.settimeout(idle_seconds)
        client.recv(len(PREFACE))
        client.sendall(_frame(0x4, b""))
        while header := _read_exactly(client, 9):
            size, kind, flags, stream = int.from_bytes(header[:3], "big"), header[3], header[4], \
                int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
            payload = _read_exactly(client, size)
            if kind == 0x4 and not flags & 0x1:  # SETTINGS: acknowledge
                client.sendall(_frame(0x4, b"", flags=0x1))
            elif kind == 0x6 and not flags & 0x1:  # PING: answer
                client.sendall(_frame(0x6, payload, flags=0x1))
            elif kind == 0x1:  # HEADERS of a new call: trailers only, END_STREAM | END_HEADERS
                client.sendall(_frame(0x1, UNIMPLEMENTED_TRAILERS, flags=0x5, stream=stream))
            elif kind == 0x7:  # GOAWAY
                break
        client.sendall(_frame(0x7, struct.pack(">II", 0, _HTTP_1_1_REQUIRED) + NOT_SERVED))
    except OSError:
        pass


def _read_exactly(client: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = client.recv(size - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def start_grpc_server(address: str = "127.0.0.1:0", workers: int = 256,
                      interceptors: Sequence[Any] = ()) -> tuple[Any, int] | None:
    """The gRPC server, by default on a loopback port of its own (None where its packages are missing);
    ``interceptors`` are the server's (the container's cap on open streams, chalicelib/container/streams.py)."""
    try:
        import grpc
        from grpc_health.v1 import health, health_pb2, health_pb2_grpc
        from grpc_reflection.v1alpha import reflection

        from chalicelib.api.rpc.services import SERVICE_NAMES, generic_handlers
    except ImportError as missing:
        log.warning("gRPC is not served: %s (install requirements-run.txt)", missing)
        return None
    server = grpc.server(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grpc"),
                         interceptors=list(interceptors),
                         options=[("grpc.keepalive_permit_without_calls", 1),
                                  ("grpc.http2.min_ping_interval_without_data_ms", 10_000)])
    server.add_generic_rpc_handlers(generic_handlers())
    checks = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checks, server)
    for name in ("", *SERVICE_NAMES):
        checks.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection((*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    server.start()
    return server, port
