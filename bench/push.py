"""The push scenario's subscriber: a local webhook server in the benchmark process.

Metro POSTs each message of a push subscription to ``{webhook}/{subscription}``; the webhook answers
204 (an ack) and queues what it got. The engine's consumer thread for that subscription drains the
queue, so "acked" means "delivered to the webhook and answered", and latency is publish-to-POST.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.metro import TS, _b64_len
from bench.pricing import google_message_bytes
from bench.workload import ConsumeFactory, Pulled


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Metro's pooled connections expect
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        received = time.time()
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
        try:
            message = json.loads(body)["message"]
        except (ValueError, KeyError, TypeError):
            self.server.bad += 1
            return
        self.server.inbox(self.path.lstrip("/")).put((received, message))

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bad = 0
        self._inboxes: dict[str, queue.Queue[tuple[float, dict[str, Any]]]] = {}
        self._lock = threading.Lock()

    def inbox(self, name: str) -> queue.Queue[tuple[float, dict[str, Any]]]:
        with self._lock:
            return self._inboxes.setdefault(name, queue.Queue())


class Webhook:
    """A local push endpoint: ``url(sub)`` is where Metro pushes ``sub``'s messages."""

    def __init__(self) -> None:
        self.server = _Server()
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name="bench-webhook", daemon=True)
        self.thread.start()

    def url(self, sub: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{sub}"

    def consumer(self, size: int, wait: float = 0.5) -> ConsumeFactory:
        """Per subscription: take what was pushed to it (waiting up to ``wait`` s for the first message)."""

        def factory(sub: str) -> Any:
            inbox = self.server.inbox(sub)

            def consume() -> Pulled:
                out = Pulled()
                try:
                    got = [inbox.get(timeout=wait)]
                except queue.Empty:
                    return out
                while True:
                    try:
                        got.append(inbox.get_nowait())
                    except queue.Empty:
                        break
                for received, m in got:
                    attrs = m.get("attributes", {})
                    data_len = _b64_len(m.get("data", ""))
                    out.ids.append(m["messageId"])
                    out.latencies.append(received - float(attrs.get(TS, received)))
                    # Google bills each push request (one message) at least 1,000 bytes, like a pull response
                    out.google_bytes += max(1000, google_message_bytes(data_len, attrs))
                    out.bad += int(data_len != size)
                return out

            return consume

        return factory

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
