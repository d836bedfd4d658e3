"""The embedded stack, in this process, instrumented for the benchmark.

moto's server and the Chalice app listen on free ports; the trigger pump runs in a thread. Every
AWS request is counted by :mod:`chalicelib.store.aws`'s request counter and labelled with the part
that made it: ``api:{verb}`` (the API handler threads, by route verb), ``fanout`` (the stream
handler, called by the pump) or ``pump`` (the pump's own stream reads and checkpoints). API handler
and fan-out durations are measured as Lambda would bill them.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.meter import meter
from bench.pricing import Invocations

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def verb_of(path: str) -> str:
    last = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "admin"


class HandlerStats:
    """Lambda-like invocations of the API (by verb) and of fan-out, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.api: dict[str, Invocations] = {}
        self.fanout = Invocations()
        self.fanout_records = 0
        self.api_errors = 0

    def record_api(self, verb: str, seconds: float, status: int) -> None:
        with self._lock:
            self.api.setdefault(verb, Invocations()).add(seconds)
            self.api_errors += int(status >= 500)

    def record_fanout(self, records: int, seconds: float) -> None:
        with self._lock:
            self.fanout.add(seconds)
            self.fanout_records += records

    def snapshot(self) -> tuple[dict[str, Invocations], Invocations, int]:
        with self._lock:
            api = {k: Invocations(v.count, v.billed_ms) for k, v in self.api.items()}
            return api, Invocations(self.fanout.count, self.fanout.billed_ms), self.fanout_records


def window(before: tuple[dict[str, Invocations], Invocations, int],
           after: tuple[dict[str, Invocations], Invocations, int]) -> tuple[dict[str, Invocations], Invocations, int]:
    api0, fan0, rec0 = before
    api1, fan1, rec1 = after
    api = {}
    for verb, inv in api1.items():
        base = api0.get(verb, Invocations())
        if inv.count - base.count:
            api[verb] = Invocations(inv.count - base.count, inv.billed_ms - base.billed_ms)
    return api, Invocations(fan1.count - fan0.count, fan1.billed_ms - fan0.billed_ms), rec1 - rec0


class BenchStack:
    """Start moto + bootstrap + Chalice app over HTTP + pump, all in this process, with counting on."""

    def __init__(self, pull_wait_seconds: float = 2.0, moto_speedup: bool = True) -> None:
        if moto_speedup:
            from bench.emulator import speed_up_moto

            speed_up_moto()
        self.moto_speedup = moto_speedup
        self.port, self.emulator_port = free_port(), free_port()
        os.environ["METRO_PORT"] = str(self.port)
        os.environ["METRO_EMULATOR_PORT"] = str(self.emulator_port)
        os.environ["METRO_HOST"] = "127.0.0.1"
        os.environ["METRO_PULL_WAIT_SECONDS"] = str(pull_wait_seconds)
        os.environ.pop("AWS_ENDPOINT_URL", None)  # always our own emulator, never a running one
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))  # app.py lives at the repository root

        from chalicelib.delivery import handlers
        from chalicelib.local.pump import StreamPump
        from chalicelib.local.server import RequestHandler, Stack
        from chalicelib.store import aws

        self.aws = aws
        self.counter = aws.RequestCounter(meter)
        aws.count_requests(self.counter)
        aws.reset_clients()
        self.stats = HandlerStats()
        stats = self.stats

        class CountingHandler(RequestHandler):
            """Labels this thread's AWS requests with the route verb and times the handler like Lambda."""

            _bench_t0: float | None = None
            _bench_verb = "admin"

            def _parse_payload(self) -> Any:
                parsed = super()._parse_payload()  # reading the socket is not handler time
                self._bench_verb = verb_of(self.path)
                aws.set_part(f"api:{self._bench_verb}")
                self._bench_t0 = time.perf_counter()
                return parsed

            def _send_http_response(self, code: int, headers: Any, body: Any) -> None:
                if self._bench_t0 is not None:
                    stats.record_api(self._bench_verb, time.perf_counter() - self._bench_t0, code)
                    self._bench_t0 = None
                super()._send_http_response(code, headers, body)

        def fanout(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
            previous = aws.set_part("fanout")
            start = time.perf_counter()
            try:
                return handlers.fanout(event, context)
            finally:
                stats.record_fanout(len(event.get("Records", [])), time.perf_counter() - start)
                aws.set_part(previous)

        self.stack = Stack(use_aws=False)
        httpd = self.stack.server.server
        original = httpd.RequestHandlerClass
        httpd.RequestHandlerClass = functools.partial(CountingHandler, *original.args, **original.keywords)
        self.pump = StreamPump(self.stack.config, fanout, interval=self.stack.local.pump_interval)
        self.stack.pump = self.pump
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = self.stack.config

        def run_pump() -> None:
            aws.set_part("pump")
            self.pump.run()

        self._threads = [
            threading.Thread(target=run_pump, name="metro-pump", daemon=True),
            threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="metro-api",
                             daemon=True),
        ]
        for t in self._threads:
            t.start()

    def client(self, service: str) -> Any:
        """A counted boto3 client on the emulator (baselines use them, labelled by their threads)."""
        return self.aws.client(service, self.config)

    def stop(self) -> None:
        self.aws.count_requests(None)
        self.stack.stop()
