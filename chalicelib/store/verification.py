"""AMS's push endpoint verification: GET ``{scheme}://{host[:port]}/ams_verification_hash`` of a push
endpoint, connecting only to the addresses the endpoint rules checked (core/endpoints.py) and never to
Metro's own ports.

The whole exchange (resolution, connect, TLS handshake, request, answer) has one deadline, counted on an
injectable clock: every socket operation gets the time left as its timeout, so an endpoint that trickles
its answer is cut off when the deadline passes. The answer is bounded too: at most ``MAX_HEAD_BYTES`` of
status line and headers and ``MAX_ANSWER_BYTES`` of body are kept.
"""

from __future__ import annotations

import re
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from chalicelib.config import Config
from chalicelib.core.ams import VERIFICATION_PATH
from chalicelib.core.endpoints import Target, parse_push_endpoint, refuse_reserved, reserved_destinations
from chalicelib.store.resolver import check_endpoint

MAX_HEAD_BYTES = 16 * 1024
MAX_ANSWER_BYTES = 4096
MAX_RAW_BODY_BYTES = 16 * 1024  # a chunked body's framing included
_STATUS = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: [^\r\n]*)?\Z")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,8})(?:;[^\r\n]*)?\Z")

Clock = Callable[[], float]


class _Malformed(Exception):
    """An answer Metro does not read further (too long, or not HTTP/1.x)."""


@dataclass(frozen=True)
class _Deadline:
    clock: Clock
    at: float

    def left(self) -> float:
        """The seconds left; TimeoutError once the deadline passed."""
        left = self.at - self.clock()
        if left <= 0:
            raise TimeoutError("the verification deadline passed")
        return left


def verification_url(push_endpoint: str) -> str:
    endpoint = parse_push_endpoint(push_endpoint)
    return f"{endpoint.scheme}://{endpoint.host_header}{VERIFICATION_PATH}"


def fetch_verification_hash(config: Config, push_endpoint: str, timeout: float = 5.0,
                            clock: Clock = time.monotonic) -> tuple[int, str]:
    """(status, body) of the endpoint's verification route; (0, reason) when it gave no usable answer within
    ``timeout`` seconds. InvalidArgument for an endpoint Metro may not reach."""
    deadline = _Deadline(clock, clock() + timeout)
    target = check_endpoint(config, verification_url(push_endpoint), timeout)
    refuse_reserved(target, reserved_destinations(config.own_ports, config.endpoint_url, deployed=config.deployed))
    try:
        with _connect(target, deadline) as sock:
            request = (f"GET {VERIFICATION_PATH} HTTP/1.1\r\nHost: {target.endpoint.host_header}\r\n"
                       "Accept: */*\r\nConnection: close\r\n\r\n").encode("ascii")
            sock.settimeout(deadline.left())
            sock.sendall(request)
            return _read_answer(sock, deadline)
    except TimeoutError:
        return 0, f"no answer within {timeout:g}s"
    except _Malformed as exc:
        return 0, str(exc)
    except OSError as exc:
        return 0, type(exc).__name__


def _connect(target: Target, deadline: _Deadline) -> socket.socket:
    """A connection to the first checked address that answers (TLS with the URL's host name for https)."""
    endpoint = target.endpoint
    failure: OSError = ConnectionError(f"no address of {endpoint.host} answered")
    for address in target.addresses:
        try:
            sock = socket.create_connection((str(address), endpoint.port), timeout=deadline.left())
        except TimeoutError:
            raise
        except OSError as exc:
            failure = exc
            continue
        if endpoint.scheme != "https":
            return sock
        try:
            sock.settimeout(deadline.left())  # the ssl module counts this once for the whole handshake
            return ssl.create_default_context().wrap_socket(sock, server_hostname=endpoint.host)
        except BaseException:
            sock.close()
            raise
    raise failure


def _recv(sock: socket.socket, deadline: _Deadline) -> bytes:
    sock.settimeout(deadline.left())
    return sock.recv(4096)


def _read_answer(sock: socket.socket, deadline: _Deadline) -> tuple[int, str]:
    head, rest = _read_head(sock, deadline)
    status_line, *lines = head.split(b"\r\n")
    match = _STATUS.match(status_line)
    if match is None:
        raise _Malformed("the answer is not HTTP/1.x")
    status = int(match.group(1))
    headers = dict(_header(line) for line in lines)
    body = b"" if status in (204, 304) else _read_body(sock, deadline, headers, rest)
    return status, body[:MAX_ANSWER_BYTES].decode("utf-8", "replace").strip()


def _read_head(sock: socket.socket, deadline: _Deadline) -> tuple[bytes, bytes]:
    """The status line and headers, and the bytes after them; each byte is searched once."""
    buffer, scanned = bytearray(), 0
    while (end := buffer.find(b"\r\n\r\n", max(0, scanned - 3))) < 0:
        if len(buffer) >= MAX_HEAD_BYTES:
            break
        scanned = len(buffer)
        chunk = _recv(sock, deadline)
        if not chunk:
            raise _Malformed("the connection closed before an answer")
        buffer += chunk
    if end < 0 or end + 4 > MAX_HEAD_BYTES:
        raise _Malformed(f"the answer's head is longer than {MAX_HEAD_BYTES} bytes")
    return bytes(buffer[:end]), bytes(buffer[end + 4:])


def _header(line: bytes) -> tuple[str, str]:
    name, _, value = line.partition(b":")
    return name.strip().lower().decode("latin-1"), value.strip().decode("latin-1")


def _read_body(sock: socket.socket, deadline: _Deadline, headers: dict[str, str], raw: bytes) -> bytes:
    """At most MAX_ANSWER_BYTES of the body: until its length, its last chunk, the connection's end, or the
    bound."""
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    length = headers.get("content-length", "")
    wanted = min(int(length), MAX_ANSWER_BYTES) if length.isascii() and length.isdigit() else MAX_ANSWER_BYTES
    buffer = bytearray(raw)
    while len(buffer) < MAX_RAW_BODY_BYTES:
        data, complete = _dechunk(bytes(buffer)) if chunked else (bytes(buffer), len(buffer) >= wanted)
        if complete or len(data) >= MAX_ANSWER_BYTES:
            return data
        chunk = _recv(sock, deadline)
        if not chunk:
            break
        buffer += chunk
    return _dechunk(bytes(buffer))[0] if chunked else bytes(buffer)


def _dechunk(raw: bytes) -> tuple[bytes, bool]:
    """The data of a chunked body so far, and whether its last chunk arrived."""
    data, pos = bytearray(), 0
    while (eol := raw.find(b"\r\n", pos)) >= 0:
        match = _CHUNK_SIZE.match(raw[pos:eol].strip())
        if match is None:
            raise _Malformed("the answer's chunked body is malformed")
        size = int(match.group(1), 16)
        if size == 0:
            return bytes(data), True
        data += raw[eol + 2:eol + 2 + size]
        pos = eol + 2 + size + 2
        if pos > len(raw):
            break
    return bytes(data), False
