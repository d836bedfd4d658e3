"""What the gRPC edge (chalicelib/local/grpc_edge.py) gives and costs, measured by ``make bench``.

- Delivery: google-cloud-pubsub's ``subscribe()`` (StreamingPull over gRPC) as a consumer of the load engine
  (:class:`StreamingConsumer`), against REST pull with the same publishers. On Metro that is scenario ``A-stream``
  beside ``A`` (bench/scenarios.py: same stack, same run); :func:`emulator_delivery` runs the same driver against
  Google's Pub/Sub emulator (``gcloud beta emulators pubsub start``) when gcloud is installed.
- The HTTP/2 preface check: every connection to the REST port is peeked at before it is served. The p50 of a
  simple REST GET (``GET /``) on two stacks, one with METRO_GRPC=1 and one with METRO_GRPC=0, over a kept-alive
  connection (one check per connection) and over a new connection per request (one check per request),
  interleaved; and the check alone on a socket with an HTTP/1.1 request waiting.
- Memory per open StreamingPull stream: the stack process's RSS and threads before and after opening
  ``streams`` streams on idle subscriptions.

Run alone: ``.venv/bin/python -m bench.grpc_bench [--quick]`` (writes bench/out/grpc.json).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

from bench.metro import TS, MetroClient, consumer, payloads, publisher
from bench.pricing import google_message_bytes
from bench.stack import ROOT, free_port
from bench.workload import Consume, ConsumeFactory, Engine, Load, Pulled, percentile

PROJECT = "bench"
cli = typer.Typer(add_completion=False)


def subscriber_client(host: str) -> Any:
    """google-cloud-pubsub's SubscriberClient on gRPC, pointed at ``host`` as at Google's emulator."""
    from google.cloud import pubsub_v1

    saved = os.environ.get("PUBSUB_EMULATOR_HOST")
    os.environ["PUBSUB_EMULATOR_HOST"] = host  # read when the client is built: an insecure channel to host
    try:
        return pubsub_v1.SubscriberClient()
    finally:
        if saved is None:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        else:
            os.environ["PUBSUB_EMULATOR_HOST"] = saved


class StreamingConsumer:
    """A consumer factory for the load engine whose consumers share one ``subscribe()`` per subscription: the
    callback acknowledges each message (``message.ack()``, sent on the stream by the client) and queues what it
    saw; each ``consume()`` hands the engine what arrived meanwhile (waiting up to a second for the first).
    Latency is publish send to callback. :meth:`close` cancels the streams."""

    def __init__(self, host: str, size: int, project: str = PROJECT) -> None:
        self.client = subscriber_client(host)
        self.size = size
        self.project = project
        self._lock = threading.Lock()
        self._streams: dict[str, tuple[Any, queue.SimpleQueue[tuple[str, float, int, int]]]] = {}

    def _stream(self, sub: str) -> queue.SimpleQueue[tuple[str, float, int, int]]:
        with self._lock:
            if sub not in self._streams:
                arrived: queue.SimpleQueue[tuple[str, float, int, int]] = queue.SimpleQueue()

                def callback(message: Any) -> None:
                    now = time.time()
                    attrs = dict(message.attributes)
                    message.ack()
                    size = len(message.data)
                    arrived.put((message.message_id, now - float(attrs.get(TS, now)),
                                 google_message_bytes(size, attrs), int(size != self.size)))

                path = f"projects/{self.project}/subscriptions/{sub}"
                self._streams[sub] = (self.client.subscribe(path, callback), arrived)
            return self._streams[sub][1]

    def __call__(self, sub: str) -> Consume:
        arrived = self._stream(sub)

        def consume() -> Pulled:
            out = Pulled()
            try:
                first = arrived.get(timeout=1.0)
            except queue.Empty:
                return out
            items = [first]
            with contextlib.suppress(queue.Empty):
                while len(items) < 1000:
                    items.append(arrived.get_nowait())
            for message_id, latency, billed, bad in items:
                out.ids.append(message_id)
                out.latencies.append(latency)
                out.google_bytes += billed
                out.bad += bad
            return out

        return consume

    def close(self) -> None:
        with self._lock:
            streams = list(self._streams.values())
            self._streams.clear()
        for future, _ in streams:
            future.cancel()
        for future, _ in streams:
            with contextlib.suppress(Exception):  # a cancelled stream ends with its cancellation
                future.result(timeout=30)
        self.client.close()


# -- processes: a stack of `make run`, Google's emulator ---------------------------------------------------------


def _wait_for(check: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return check()


@contextlib.contextmanager
def stack_process(logs: Path, name: str, extra_env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``python -m chalicelib.local`` on free ports with ``extra_env``; yields its URL and process."""
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "METRO_PORT": str(port), "METRO_EMULATOR_PORT": str(free_port()),
           "METRO_AMS_PORT": str(free_port()), "METRO_AMS_CERT_DIR": str(logs / f"{name}-tls"),
           "METRO_HOST": "127.0.0.1", "METRO_AUTH": "open", "PYTHONUNBUFFERED": "1", **extra_env}
    env.pop("AWS_ENDPOINT_URL", None)
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "chalicelib.local"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        if not _wait_for(lambda: proc.poll() is not None or "Metro listening" in log.read_text(errors="replace"),
                         90) or proc.poll() is not None:
            raise RuntimeError(f"the stack {name} did not start:\n{log.read_text(errors='replace')[-2000:]}")
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def google_emulator(logs: Path) -> Iterator[str]:
    """Google's Pub/Sub emulator on a free port (``gcloud beta emulators pubsub start``); yields its URL."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise RuntimeError("gcloud is not installed")
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = logs / "pubsub-emulator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([gcloud, "beta", "emulators", "pubsub", "start", f"--host-port=127.0.0.1:{port}",
                                 f"--project={PROJECT}"], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, "CLOUDSDK_CORE_DISABLE_PROMPTS": "1"},
                                start_new_session=True)  # gcloud starts a script that starts the JVM: one group
    try:
        if not _wait_for(lambda: proc.poll() is not None or "Server started" in log.read_text(errors="replace"),
                         120, 0.2) or proc.poll() is not None:
            raise RuntimeError(f"the Pub/Sub emulator did not start:\n{log.read_text(errors='replace')[-2000:]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


# -- delivery on Google's emulator: the same driver as A and A-stream ---------------------------------------------


def _patient(factory: ConsumeFactory, pause: float = 0.02) -> ConsumeFactory:
    """The emulator often answers an empty pull at once (Metro and Google wait for messages): a short pause after
    an empty pull, so that idle pullers do not spin on the CPUs the emulator needs."""

    def make(sub: str) -> Consume:
        consume = factory(sub)

        def patient() -> Pulled:
            got = consume()
            if not got.ids:
                time.sleep(pause)
            return got

        return patient

    return make


def _phase(url: str, consume: ConsumeFactory, messages: int, publishers: int, consumers: int, window: int,
           timeout: float, singles: int, label: str) -> dict[str, Any]:
    client = MetroClient(url)
    topic, sub = f"{label}-{int(time.time() * 1000) % 10**8}", f"{label}-{int(time.time() * 1000) % 10**8}-s"
    client.create(topic, [sub])
    publish = publisher(url, topic, payloads(1024), 1024)
    out = Engine(Load(messages, 100, [sub], publishers, consumers, window, timeout), publish, consume).run()
    probe = Engine(Load(singles, 1, [sub], 1, consumers, 0, timeout, interval=0.25), publish, consume).run()
    return {"messages": messages, "complete": out.complete, "errors": out.errors[:5],
            "throughput_msgs_s": round(messages / out.elapsed, 1) if out.complete and out.elapsed else 0.0,
            "latency_p50_ms": round(percentile([x * 1000 for x in out.latencies], 50), 1),
            "single_p50_ms": round(percentile([x * 1000 for x in probe.latencies], 50), 1)
            if probe.complete else None, "single_samples": len(probe.latencies), "duplicates": out.duplicates}


def emulator_delivery(logs: Path, messages: int, publishers: int, consumers: int, window: int, timeout: float,
                      singles: int) -> dict[str, Any]:
    """REST pull, then ``subscribe()``, on Google's emulator: the load of A-stream, and single messages every
    0.25 s for the latency; ``{"skipped": why}`` without gcloud."""
    if shutil.which("gcloud") is None or shutil.which("java") is None:
        return {"skipped": "gcloud (and java) are not installed: Google's emulator was not measured"}
    with google_emulator(logs) as url:
        rest = _phase(url, _patient(consumer(url, 1024, 100, 60)), messages, publishers, consumers, window,
                      timeout, singles, "emu-rest")
        streaming = StreamingConsumer(url.removeprefix("http://"), 1024)
        try:
            stream = _phase(url, streaming, messages, publishers, 1, window, timeout, singles, "emu-stream")
        finally:
            streaming.close()
    return {"rest_pull": rest, "streaming_pull": stream}


# -- the HTTP/2 preface check -------------------------------------------------------------------------------------


def _get_ms(connection: http.client.HTTPConnection) -> float:
    start = time.perf_counter()
    connection.request("GET", "/")
    answer = connection.getresponse()
    answer.read()
    if answer.status != 200:
        raise RuntimeError(f"GET / answered {answer.status}")
    return (time.perf_counter() - start) * 1000


def _gets(host: str, port: int, count: int, fresh: bool) -> list[float]:
    """``count`` GETs of ``/``, on one kept-alive connection or (``fresh``) each on a new one, connect included."""
    times = []
    kept = http.client.HTTPConnection(host, port, timeout=30)
    try:
        for _ in range(count):
            if fresh:
                start = time.perf_counter()
                connection = http.client.HTTPConnection(host, port, timeout=30)
                try:
                    connection.connect()
                    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    _get_ms(connection)
                finally:
                    connection.close()
                times.append((time.perf_counter() - start) * 1000)
            else:
                times.append(_get_ms(kept))
    finally:
        kept.close()
    return times


def check_alone_us(calls: int = 20_000) -> float:
    """Microseconds of one ``opens_http2`` on a socket with an HTTP/1.1 request waiting (peeked, not read)."""
    from chalicelib.local.grpc_edge import opens_http2

    server, client = socket.socketpair()
    try:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        start = time.perf_counter()
        for _ in range(calls):
            if opens_http2(server):
                raise RuntimeError("an HTTP/1.1 request was taken for HTTP/2")
        return round((time.perf_counter() - start) / calls * 1e6, 2)
    finally:
        server.close()
        client.close()


def preface_cost(urls: dict[str, str], rounds: int, per_round: int) -> dict[str, Any]:
    """p50 (and p90) of ``GET /`` on each stack, kept-alive and on new connections, interleaved round by round."""
    times: dict[str, dict[str, list[float]]] = {name: {"kept_alive": [], "new_connection": []} for name in urls}
    for url in urls.values():  # warm: lazy imports, first connections
        host, port = url.removeprefix("http://").split(":")
        _gets(host, int(port), 20, fresh=False)
    for _ in range(rounds):
        for name, url in urls.items():
            host, port = url.removeprefix("http://").split(":")
            times[name]["kept_alive"] += _gets(host, int(port), per_round, fresh=False)
            times[name]["new_connection"] += _gets(host, int(port), per_round, fresh=True)
    out: dict[str, Any] = {"request": "GET /", "samples_per_mode": rounds * per_round}
    for name, modes in times.items():
        out[name] = {mode: {"p50_ms": round(percentile(ms, 50), 3), "p90_ms": round(percentile(ms, 90), 3)}
                     for mode, ms in modes.items()}
    for mode in ("kept_alive", "new_connection"):
        out[f"{mode}_p50_delta_ms"] = round(out["grpc_on"][mode]["p50_ms"] - out["grpc_off"][mode]["p50_ms"], 3)
    out["check_alone_us"] = check_alone_us()
    return out


# -- memory per stream --------------------------------------------------------------------------------------------


def _proc_status(pid: int) -> tuple[int, int]:
    """(resident set in KiB, threads) of a process, from /proc."""
    rss = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads


def _settled_rss(pid: int, timeout: float = 20.0) -> int:
    """The RSS once three reads 0.25 s apart move less than 256 KiB (or after ``timeout``)."""
    reads = [_proc_status(pid)[0]]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.25)
        reads.append(_proc_status(pid)[0])
        if len(reads) >= 3 and max(reads[-3:]) - min(reads[-3:]) < 256:
            break
    return reads[-1]


def stream_memory(url: str, pid: int, streams: int) -> dict[str, Any]:
    """Open ``streams`` StreamingPull streams (one ``subscribe()`` each, one client) on idle subscriptions of the
    stack process ``pid``; its RSS and threads before, with them open, and after they closed."""
    client = MetroClient(url)
    subs = [f"idle-{i}" for i in range(streams + 1)]
    client.create("idle-topic", subs)
    threads_idle = _proc_status(pid)[1]
    warm = StreamingConsumer(url.removeprefix("http://"), 1024)
    warm(subs[-1])  # one stream opened and closed first: what the first stream loads is not per stream
    _wait_for(lambda: _proc_status(pid)[1] > threads_idle, 30, 0.1)
    warm.close()
    rss_before = _settled_rss(pid)
    threads_before = _proc_status(pid)[1]
    many = StreamingConsumer(url.removeprefix("http://"), 1024)
    try:
        for sub in subs[:streams]:
            many(sub)
        opened = _wait_for(lambda: _proc_status(pid)[1] >= threads_before + streams, 60, 0.2)
        rss_open = _settled_rss(pid)
        threads_open = _proc_status(pid)[1]
    finally:
        many.close()
    _wait_for(lambda: _proc_status(pid)[1] <= threads_open - streams, 30, 0.2)
    rss_closed = _settled_rss(pid)
    return {"streams": streams, "all_open": opened, "rss_before_mib": round(rss_before / 1024, 1),
            "rss_open_mib": round(rss_open / 1024, 1), "rss_closed_mib": round(rss_closed / 1024, 1),
            "kib_per_stream": round((rss_open - rss_before) / streams, 1),
            "threads_before": threads_before, "threads_open": threads_open,
            "threads_per_stream": round((threads_open - threads_before) / streams, 2)}


# -- all of it ----------------------------------------------------------------------------------------------------


def measure(logs: Path, quick: bool, publishers: int, consumers: int, window: int, timeout: float,
            emulator_messages: int, emulator: bool = True) -> dict[str, Any]:
    """The preface check's cost and the memory per stream (two stacks of their own), then delivery on Google's
    emulator (when ``emulator`` and gcloud is installed)."""
    out: dict[str, Any] = {}
    with stack_process(logs, "grpc-on", {"METRO_GRPC": "1"}) as (on_url, on), \
            stack_process(logs, "grpc-off", {"METRO_GRPC": "0"}) as (off_url, _):
        out["preface_check"] = preface_cost({"grpc_on": on_url, "grpc_off": off_url},
                                            rounds=3 if quick else 6, per_round=30 if quick else 100)
        out["stream_memory"] = stream_memory(on_url, on.pid, 10 if quick else 50)
    out["emulator_delivery"] = emulator_delivery(logs, emulator_messages, publishers, consumers, window, timeout,
                                                 singles=8 if quick else 40) if emulator else {"skipped": "not asked"}
    return out


def delivery_summary(results: dict[str, dict[str, Any]], grpc: dict[str, Any] | None) -> dict[str, Any]:
    """A against A-stream (Metro) beside REST pull against subscribe() on Google's emulator, side by side."""
    def row(r: dict[str, Any] | None) -> dict[str, Any] | None:
        if r is None:
            return None
        single = (r.get("probe_single") or {}).get("latency_ms") or {}
        return {"messages": r["messages"], "complete": r["complete"], "throughput_msgs_s": r["throughput_msgs_s"],
                "latency_p50_ms": r["latency_ms"]["p50"], "single_p50_ms": single.get("p50")}

    return {"metro": {"rest_pull": row(results.get("A")), "streaming_pull": row(results.get("A-stream"))},
            "emulator": (grpc or {}).get("emulator_delivery")}


def lines(grpc: dict[str, Any], delivery: dict[str, Any] | None = None) -> list[str]:
    """What a run prints about the gRPC edge."""
    out = []
    for where, sides in (delivery or {}).items():
        if not sides or "skipped" in sides:
            out.append(f"delivery on {where}: {(sides or {}).get('skipped', 'not measured')}")
            continue
        for kind in ("rest_pull", "streaming_pull"):
            r = sides.get(kind)
            if r:
                out.append(f"delivery on {where}, {kind}: {r['throughput_msgs_s']} msg/s, p50 "
                           f"{r['latency_p50_ms']} ms under load, {r['single_p50_ms']} ms for single messages")
    pre = grpc.get("preface_check")
    if pre:
        out.append(f"GET / p50 kept-alive: gRPC on {pre['grpc_on']['kept_alive']['p50_ms']} ms, off "
                   f"{pre['grpc_off']['kept_alive']['p50_ms']} ms; new connection: on "
                   f"{pre['grpc_on']['new_connection']['p50_ms']} ms, off {pre['grpc_off']['new_connection']['p50_ms']}"
                   f" ms; the check alone {pre['check_alone_us']} us")
    mem = grpc.get("stream_memory")
    if mem:
        out.append(f"{mem['streams']} open StreamingPull streams: RSS {mem['rss_before_mib']} -> {mem['rss_open_mib']}"
                   f" MiB ({mem['kib_per_stream']} KiB and {mem['threads_per_stream']} threads per stream), "
                   f"{mem['rss_closed_mib']} MiB after they closed")
    return out


@cli.command()
def main(quick: bool = typer.Option(False, "--quick", help="Fewer requests, streams and messages."),
         emulator: bool = typer.Option(True, help="Also measure delivery on Google's emulator (needs gcloud)."),
         out: Path = typer.Option(ROOT / "bench" / "out" / "grpc.json", help="Where to write the figures.")) -> None:
    """The preface check's cost, the memory per StreamingPull stream and delivery on Google's emulator."""
    result = measure(out.parent / "grpc-logs", quick, 4, 4, 300, 120 if quick else 900, 200 if quick else 3000,
                     emulator)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for line in lines(result, {"emulator": result["emulator_delivery"]}):
        print(line)
    print(f"wrote {out}")


if __name__ == "__main__":
    cli()
