"""A recording webhook server for the push tests (e2e, rehearsal, and the unit tests of its waits).

``Webhook`` is a ThreadingHTTPServer on a free 127.0.0.1 port speaking HTTP/1.1 with keep-alive (a
deep listen backlog: the default of 5 makes concurrent pushes wait for SYN retransmits). Each test
takes its own path with :meth:`Webhook.hook` and says how to answer: a status, a ``(seconds, status)``
pair to answer late, or ``DROP`` to close the connection without an answer.

About 102: http.server can send a bare ``102 Processing`` status line; Python's http.client
(under urllib3) returns any 1xx other than 100 as the final status, so Metro sees 102 and acks.
Metro then closes that connection, since a real server may still send its final answer on it.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DROP = -1
Answer = Callable[[int, "Request"], "int | tuple[float, int]"]


@dataclass
class Request:
    at: float
    path: str
    headers: dict[str, str]
    body: bytes
    peer: int = 0  # the client's port: one per connection

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def message_id(self) -> str:
        return str(self.json()["message"]["messageId"])


@dataclass
class Hook:
    url: str
    answer: Answer
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, count: int, timeout: float) -> list[Request]:
        end = time.monotonic() + timeout
        while time.monotonic() < end and len(self.requests) < count:
            time.sleep(0.02)
        return list(self.requests)

    def ids(self) -> list[str]:
        return [r.message_id for r in list(self.requests)]

    def wait_for_message(self, message_id: str, timeout: float) -> Request:
        """The first push of ``message_id``, also when it came before this call.

        A push may arrive before the publish that sent it has returned (direct fan-out enqueues the
        message, then records the publish), so a wait for "one request more than after the publish"
        can count the awaited push as already there and wait for one that never comes.
        """
        end = time.monotonic() + timeout
        while True:
            for request in list(self.requests):
                if request.message_id == message_id:
                    return request
            if time.monotonic() >= end:
                raise AssertionError(f"message {message_id} was not pushed within {timeout}s")
            time.sleep(0.02)

    def quiet_after(self, publish_marker: Callable[[], str], window: float = 1.0, timeout: float = 15) -> list[Request]:
        """For "nothing more arrives" checks: publish a marker message to this hook's subscription and wait until
        it arrives (the positive control: the same wait does see a delivery) and ``window`` seconds have passed.
        Returns every request so far; the caller asserts that nothing but the marker came."""
        start = time.monotonic()
        marker = publish_marker()
        end = start + timeout
        while time.monotonic() < end and marker not in self.ids():
            time.sleep(0.02)
        assert marker in self.ids(), "the marker message never arrived: this wait could not see a delivery"
        rest = window - (time.monotonic() - start)
        if rest > 0:
            self.wait_for(len(self.requests) + 1, rest)  # ends early if anything else arrives
        return list(self.requests)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        hook = self.server.hooks.get(self.path)
        if hook is None:
            self._reply(404)
            return
        request = Request(time.time(), self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                          self.client_address[1])
        with hook.lock:
            index = len(hook.requests)
            hook.requests.append(request)
        answer = hook.answer(index, request)
        delay, status = answer if isinstance(answer, tuple) else (0.0, answer)
        if delay:
            time.sleep(delay)
        if status == DROP:
            self.close_connection = True
            return
        if status < 200:
            self.send_response_only(status)
            self.end_headers()
            self.close_connection = True
            return
        self._reply(status)

    def _reply(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.hooks: dict[str, Hook] = {}


class Webhook:
    def __init__(self, port: int = 0) -> None:
        self.server = _Server(port)
        self.port = self.server.server_address[1]
        self._paths = itertools.count()
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def hook(self, answer: Answer | int = 204, name: str = "") -> Hook:
        path = f"/{name or 'hook'}-{next(self._paths)}"
        fn: Answer = answer if callable(answer) else (lambda i, r, s=answer: s)  # type: ignore[misc]
        hook = Hook(f"http://127.0.0.1:{self.port}{path}", fn)
        self.server.hooks[path] = hook
        return hook

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
