"""The embedded stack, in this process, instrumented for the benchmark.

moto's server and the Chalice app listen on free ports; the trigger pump runs in a thread. Every
AWS request is counted by :mod:`chalicelib.store.aws`'s request counter and labelled with the part
that made it: ``api:{verb}`` (the API handler threads, by route verb), ``fanout`` (the stream
handler, called by the pump), ``pump`` (the pump's own stream reads and checkpoints), ``push`` (the
push handler, called by the push pump) or ``seek_worker`` (a background seek's chunks, the asynchronous
invocations the invoke pump plays), ``push-pump`` (the push pump's receives, which Lambda's SQS
poller makes on AWS, and its local-only bookkeeping); inside an API request, the token and ACL check's
own requests are ``api-auth``. API handler, fan-out and push durations are measured as Lambda would bill
them, and each API request's time in the check (``authenticate`` + ``authorize``) is kept too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.environment import environment
from bench.meter import meter
from bench.metro import PROJECT
from bench.pricing import Invocations

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


AUTH_PART = "api-auth"  # AWS requests made by the edge's token and ACL check (cache misses), billed like api:*
_auth = threading.local()  # this API thread's time in the check during the current request


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
        self.api_ms: dict[str, list[float]] = {}  # every API request's handler time (ms), by verb, in order
        self.auth_ms: dict[str, list[float]] = {}  # the part of it in authenticate + authorize, same order
        self.api_errors = 0

    def record_api(self, verb: str, seconds: float, status: int, auth_seconds: float = 0.0) -> None:
        with self._lock:
            self.api.setdefault(verb, Invocations()).add(seconds)
            self.api_ms.setdefault(verb, []).append(seconds * 1000)
            self.auth_ms.setdefault(verb, []).append(auth_seconds * 1000)
            self.api_errors += int(status >= 500)

    def marks(self) -> dict[str, int]:
        """How many handler times each verb has so far (a window's bounds for :meth:`api_ms_between`)."""
        with self._lock:
            return {verb: len(ms) for verb, ms in self.api_ms.items()}

    def api_ms_between(self, before: dict[str, int], after: dict[str, int],
                       auth: bool = False) -> dict[str, list[float]]:
        """The handler times (ms; ``auth``: their part in the token and ACL check) of the API requests
        answered between two :meth:`marks`, by verb."""
        source = self.auth_ms if auth else self.api_ms
        with self._lock:
            out = {verb: source[verb][before.get(verb, 0):end] for verb, end in after.items()}
        return {verb: ms for verb, ms in out.items() if ms}

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
            _auth.seconds = 0.0
            self._bench_t0 = time.perf_counter()
            return parsed

        def _send_http_response(self, code: int, headers: Any, body: Any) -> None:
            if self._bench_t0 is not None:
                stats.record_api(self._bench_verb, time.perf_counter() - self._bench_t0, code,
                                 getattr(_auth, "seconds", 0.0))
                self._bench_t0 = None
            super()._send_http_response(code, headers, body)

    return CountingHandler


def timed_auth(aws: Any, check: Any) -> Any:
    """``check`` (the edge's authenticate or authorize), timed into the request's auth time, its AWS requests
    (cache misses: the token's user, the resource's ACL) labelled :data:`AUTH_PART`."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        previous = aws.set_part(AUTH_PART)
        start = time.perf_counter()
        try:
            return check(*args, **kwargs)
        finally:
            _auth.seconds = getattr(_auth, "seconds", 0.0) + time.perf_counter() - start
            aws.set_part(previous)

    return wrapped


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


def patch_moto(speed_up: bool) -> None:
    """What `make run` applies to its embedded moto: the fixes always, the speed-ups unless measured without."""
    from chalicelib.local.moto_fixes import fix_moto

    fix_moto()
    if speed_up:
        from chalicelib.local.moto_speedups import speed_up_moto

        speed_up_moto()


class BenchStack:
    """Start moto + bootstrap + Chalice app over HTTP + pump, all in this process, with counting on."""

    def __init__(self, pull_wait_seconds: float = 2.0, moto_speedup: bool = True) -> None:
        patch_moto(moto_speedup)
        self.moto_speedup = moto_speedup
        self.port, self.emulator_port = free_port(), free_port()
        os.environ["METRO_PORT"] = str(self.port)
        os.environ["METRO_EMULATOR_PORT"] = str(self.emulator_port)
        os.environ["METRO_AMS_PORT"] = str(free_port())
        os.environ["METRO_HOST"] = "127.0.0.1"
        os.environ["METRO_PULL_WAIT_SECONDS"] = str(pull_wait_seconds)
        os.environ["METRO_AUTH"] = "open"  # scenarios in keys mode switch to it themselves (keys_mode)
        os.environ.pop("AWS_ENDPOINT_URL", None)  # always our own emulator, never a running one
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))  # app.py lives at the repository root

        from chalicelib.api import routes
        from chalicelib.delivery import event_handlers
        from chalicelib.local.pump import StreamPump
        from chalicelib.local.push_pump import PushPump
        from chalicelib.local.server import RequestHandler, Stack
        from chalicelib.service.access import AccessService
        from chalicelib.store import aws

        self.aws = aws
        self.counter = aws.RequestCounter(meter)
        aws.count_requests(self.counter)
        aws.reset_clients()
        self.stats = HandlerStats()
        stats = self.stats

        fanout = counted(aws, stats, "fanout", event_handlers.fanout)
        push = counted(aws, stats, "push", event_handlers.push)

        self.stack = Stack(use_aws=False)
        # The edge's check, in both modes (open mode's is timed as well): routes.execute calls the access
        # service's authenticate (a method: patched on its class) and the authorize that routes imports.
        for owner, check in ((AccessService, "authenticate"), (routes, "authorize")):
            setattr(owner, check, timed_auth(aws, getattr(owner, check)))
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

        self.invocations = self._invoke_pump()
        self._threads = [
            threading.Thread(target=self.invocations.run, name="metro-invoke", daemon=True),
            threading.Thread(target=run_pump, name="metro-pump", daemon=True),
            threading.Thread(target=run_push_pump, name="metro-push-pump", daemon=True),
            threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="metro-api",
                             daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _invoke_pump(self) -> Any:
        """Lambda's asynchronous invocations (the background seek's worker), labelled ``seek_worker``."""
        from chalicelib import runtime
        from chalicelib.delivery import event_handlers
        from chalicelib.local.invoke_pump import InvokePump

        worker = counted(self.aws, self.stats, "seek_worker", event_handlers.seek_worker)
        pump = InvokePump(lambda: runtime.services().ctx.invoker.pending, {"seek_worker": worker})
        self.stack.invocations = pump
        return pump

    def client(self, service: str) -> Any:
        """A counted boto3 client on the emulator (baselines use them, labelled by their threads)."""
        return self.aws.client(service, self.config)

    @contextlib.contextmanager
    def keys_mode(self) -> Iterator[str]:
        """Serve with ``METRO_AUTH=keys`` inside the block (yields a fresh admin token), open mode again after.

        Metro reads its configuration when it builds its services (``chalicelib.runtime.services()``, cached
        per process, as in a warm Lambda): the block sets the variables and rebuilds them, which is what a
        stage deployed with keys does. The pumps keep their configuration: fan-out and push do not check
        tokens. Call it between scenarios only, while no request is in flight.
        """
        admin_key = secrets.token_urlsafe(32)
        # keys mode refuses the built-in ack secret: one of its own, fresh per run
        with self.settings({"METRO_AUTH": "keys", "METRO_ADMIN_KEY": admin_key,
                            "METRO_ACK_SECRET": secrets.token_urlsafe(32)}):
            yield admin_key

    @contextlib.contextmanager
    def settings(self, values: dict[str, str]) -> Iterator[None]:
        """Serve with these configuration variables inside the block (Metro's services rebuilt with them), the
        previous ones after. Call it between scenarios only, while no request is in flight."""
        from chalicelib import runtime

        with environment(values):
            runtime.reset()
            try:
                yield
            finally:
                runtime.reset()

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
