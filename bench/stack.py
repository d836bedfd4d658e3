"""The embedded stack, in this process, instrumented for the benchmark.

moto's server and the Chalice app listen on free ports; the trigger pump runs in a thread. Every
AWS request is counted by :mod:`chalicelib.store.aws`'s request counter and labelled with the part
that made it: ``api:{verb}`` (the API handler threads, by route verb), ``fanout`` (the stream
handler, called by the pump), ``pump`` (the pump's own stream reads and checkpoints), ``push`` (the
push handler, called by the push pump) or ``push-pump`` (the push pump's receives, which Lambda's SQS
poller makes on AWS, and its local-only bookkeeping). API handler, fan-out and push durations are
measured as Lambda would bill them.
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
from bench.metro import PROJECT
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
    """Lambda-like invocations of the API (by verb) and of the event handlers (fanout, push), thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.api: dict[str, Invocations] = {}
        self.events: dict[str, Invocations] = {}
        self.records: dict[str, int] = {}
        self.api_errors = 0

    def record_api(self, verb: str, seconds: float, status: int) -> None:
        with self._lock:
            self.api.setdefault(verb, Invocations()).add(seconds)
            self.api_errors += int(status >= 500)

    def record_event(self, kind: str, records: int, seconds: float) -> None:
        with self._lock:
            self.events.setdefault(kind, Invocations()).add(seconds)
            self.records[kind] = self.records.get(kind, 0) + records

    def snapshot(self) -> Snapshot:
        with self._lock:
            api = {k: Invocations(v.count, v.billed_ms) for k, v in self.api.items()}
            events = {k: Invocations(v.count, v.billed_ms) for k, v in self.events.items()}
            return api, events, dict(self.records)


# (API invocations by verb, event handler invocations by kind, records handled by kind)
Snapshot = tuple[dict[str, Invocations], dict[str, Invocations], dict[str, int]]


def _delta(after: dict[str, Invocations], before: dict[str, Invocations]) -> dict[str, Invocations]:
    out = {}
    for key, inv in after.items():
        base = before.get(key, Invocations())
        if inv.count - base.count:
            out[key] = Invocations(inv.count - base.count, inv.billed_ms - base.billed_ms)
    return out


def window(before: Snapshot, after: Snapshot) -> Snapshot:
    """What happened between two snapshots."""
    records = {k: v - before[2].get(k, 0) for k, v in after[2].items()}
    return _delta(after[0], before[0]), _delta(after[1], before[1]), records


def counting_handler(base: Any, aws: Any, stats: HandlerStats) -> Any:
    """The API request handler class that labels its thread's AWS requests with the route verb and times the
    handler as Lambda would bill it."""

    class CountingHandler(base):  # type: ignore[misc]
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

    return CountingHandler


def counted(aws: Any, stats: HandlerStats, kind: str, handler: Any) -> Any:
    """An event handler that labels its AWS requests ``kind`` and is timed like a Lambda invocation."""

    def wrapped(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        previous = aws.set_part(kind)
        start = time.perf_counter()
        try:
            return dict(handler(event, context))
        finally:
            stats.record_event(kind, len(event.get("Records", [])), time.perf_counter() - start)
            aws.set_part(previous)

    return wrapped


class BenchStack:
    """Start moto + bootstrap + Chalice app over HTTP + pump, all in this process, with counting on."""

    def __init__(self, pull_wait_seconds: float = 2.0, moto_speedup: bool = True) -> None:
        if moto_speedup:
            from chalicelib.local.moto_speedups import speed_up_moto

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
        from chalicelib.local.push_pump import PushPump
        from chalicelib.local.server import RequestHandler, Stack
        from chalicelib.store import aws

        self.aws = aws
        self.counter = aws.RequestCounter(meter)
        aws.count_requests(self.counter)
        aws.reset_clients()
        self.stats = HandlerStats()
        stats = self.stats

        fanout, push = (counted(aws, stats, "fanout", handlers.fanout), counted(aws, stats, "push", handlers.push))

        self.stack = Stack(use_aws=False)
        httpd = self.stack.server.server
        original = httpd.RequestHandlerClass
        handler_class = counting_handler(RequestHandler, aws, stats)
        httpd.RequestHandlerClass = functools.partial(handler_class, *original.args, **original.keywords)
        self.pump = StreamPump(self.stack.config, fanout, interval=self.stack.local.pump_interval)
        self.stack.pump = self.pump
        # The push pump plays Lambda's SQS pollers: its receives are labelled "push-pump", the handler "push".
        self.push_pump = PushPump(self.stack.config, push, refresh=self.stack.local.push_refresh, part="push-pump")
        self.stack.push_pump = self.push_pump
        self._webhook: Any = None
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = self.stack.config

        def run_pump() -> None:
            aws.set_part("pump")
            self.pump.run()

        def run_push_pump() -> None:
            aws.set_part("push-pump")
            self.push_pump.run()

        self._threads = [
            threading.Thread(target=run_pump, name="metro-pump", daemon=True),
            threading.Thread(target=run_push_pump, name="metro-push-pump", daemon=True),
            threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="metro-api",
                             daemon=True),
        ]
        for t in self._threads:
            t.start()

    def client(self, service: str) -> Any:
        """A counted boto3 client on the emulator (baselines use them, labelled by their threads)."""
        return self.aws.client(service, self.config)

    def webhook(self) -> Any:
        """The local push endpoint (bench/push.py), started on first use."""
        if self._webhook is None:
            from bench.push import Webhook

            self._webhook = Webhook()
        return self._webhook

    def wait_for_push(self, subscription: str, timeout: float = 10.0) -> bool:
        """Wait until the push pump delivers ``subscription`` (it lists push subscriptions every second)."""
        path = f"projects/{PROJECT}/subscriptions/{subscription}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path in self.push_pump.pollers:
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        self.aws.count_requests(None)
        self.stack.stop()
        if self._webhook is not None:
            self._webhook.close()
