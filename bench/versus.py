"""Metro against Google's Pub/Sub emulator, side by side, with the same REST driver (``make bench``).

One driver for both servers: google-cloud-pubsub's PublisherClient and SubscriberClient on ``transport="rest"``,
``api_endpoint`` pointed at the server, anonymous credentials. Runs alternate Metro / emulator / Metro / ...,
each on a freshly started server (Metro as ``make run`` starts it, with ``METRO_DATA_DIR`` in a fresh temporary
directory; the emulator with ``gcloud beta emulators pubsub start``); the figures are the medians of the runs.
Each run measures:

1. publish throughput: ``messages`` messages of 1 KiB in requests of 100 (``publishers`` threads), msg/s;
2. pull + ack throughput: draining those messages (pull maxMessages=100, then acknowledge the ack ids), msg/s,
   counting duplicate deliveries (a messageId delivered twice);
3. paced latency: one message every 20 ms, a consumer long-pulling (returnImmediately=false); latency is
   receive time - publish call start; p50 and p99 in ms;
4. create + delete topic: ms per pair (median of ``pairs``);
5. the server's RSS after the run (VmRSS of the process tree; for the emulator, its JVM) and its startup time
   (process start until the port answers an HTTP request).

Ratios are written as "Metro advantage": Metro/emulator for throughputs, emulator/Metro for times and memory,
so > 1 always means Metro is better. Targets are reported (met / missed), never asserted.

Run: ``.venv/bin/python -m bench.versus [--quick] [--runs 3]`` (writes bench/out/versus.json).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import typer
from rich.console import Console

from bench.grpc_bench import google_emulator, stack_process
from bench.stack import ROOT
from bench.versus_report import summarize, table, target_lines, targets
from bench.workload import percentile

PROJECT = "bench"
cli = typer.Typer(add_completion=False)


@contextlib.contextmanager
def clients(url: str) -> Iterator[tuple[Any, Any]]:
    """A REST PublisherClient and SubscriberClient on ``url``, anonymous; their sessions closed after."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import pubsub_v1

    opts, creds = ClientOptions(api_endpoint=url), AnonymousCredentials()  # type: ignore[no-untyped-call]
    pub = pubsub_v1.PublisherClient(transport="rest", credentials=creds, client_options=opts)
    sub = pubsub_v1.SubscriberClient(transport="rest", credentials=creds, client_options=opts)
    try:
        yield pub, sub
    finally:  # close() on the wrappers closes a gRPC channel, which REST has not
        pub.api.transport.close()
        sub.api.transport.close()


def _batch(start: int, count: int, data: bytes) -> list[dict[str, Any]]:
    return [{"data": data, "attributes": {"n": str(n)}} for n in range(start, start + count)]


def publish_all(url: str, topic: str, messages: int, publishers: int, data: bytes) -> float:
    """``messages`` messages in requests of 100 over ``publishers`` threads (a client each, built first); msg/s."""
    starts = list(range(0, messages, 100))
    with contextlib.ExitStack() as stack:
        pubs = [stack.enter_context(clients(url))[0] for _ in range(publishers)]

        def work(n: int) -> None:
            for start in starts[n::publishers]:
                pub = pubs[n]
                pub.api.publish(request={"topic": topic, "messages": _batch(start, min(100, messages - start), data)},
                                timeout=60)

        began = time.perf_counter()
        with ThreadPoolExecutor(publishers) as pool:
            list(pool.map(work, range(publishers)))  # re-raises a publisher's error
        return messages / (time.perf_counter() - began)


def drain(sub: Any, path: str, expected: int) -> dict[str, Any]:
    """Pull (maxMessages=100) and acknowledge until ``expected`` distinct messages came (or 30 empty pulls in a
    row): msg/s, distinct messages, duplicate deliveries, and how long each batch was held (pull call start to
    the acknowledge's answer: the longest any lease of the batch had to last)."""
    seen: set[str] = set()
    duplicates = empty = 0
    holds: list[float] = []
    began = time.perf_counter()
    while len(seen) < expected and empty < 30:
        pulled = time.perf_counter()
        answer = sub.pull(request={"subscription": path, "max_messages": 100, "return_immediately": False},
                          timeout=60)
        got = answer.received_messages
        if not got:
            empty += 1
            continue
        empty = 0
        sub.acknowledge(request={"subscription": path, "ack_ids": [m.ack_id for m in got]}, timeout=60)
        holds.append((time.perf_counter() - pulled) * 1000)
        for m in got:
            if m.message.message_id in seen:
                duplicates += 1
            seen.add(m.message.message_id)
    return {"msgs_s": len(seen) / (time.perf_counter() - began), "distinct": len(seen), "duplicates": duplicates,
            "pulls": len(holds), "hold_p50_ms": round(percentile(holds, 50), 1),
            "hold_max_ms": round(max(holds, default=0.0), 1)}


def paced(url: str, topic: str, path: str, count: int, interval: float) -> dict[str, Any]:
    """One message every ``interval`` s; a consumer thread long-pulls and acks; latency = receive - publish start."""
    sent: dict[str, float] = {}
    latencies: list[float] = []
    done = threading.Event()
    dups = [0]

    def consume() -> None:
        with clients(url) as (_, sub):
            deadline = None
            while len(latencies) < count and not (deadline and time.monotonic() > deadline):
                answer = sub.pull(request={"subscription": path, "max_messages": 100, "return_immediately": False},
                                  timeout=60)
                now = time.monotonic()
                got = answer.received_messages
                if got:
                    sub.acknowledge(request={"subscription": path, "ack_ids": [m.ack_id for m in got]}, timeout=60)
                for m in got:
                    start = sent.pop(m.message.attributes["n"], None)
                    if start is None:
                        dups[0] += 1
                    else:
                        latencies.append((now - start) * 1000)
                if deadline is None and done.is_set():
                    deadline = time.monotonic() + 30

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.5)  # the consumer's first pull is waiting
    data = b"x" * 1024
    with clients(url) as (pub, _):
        nxt = time.monotonic()
        for n in range(count):
            nxt += interval
            sent[str(n)] = time.monotonic()
            pub.api.publish(request={"topic": topic, "messages": _batch(n, 1, data)}, timeout=60)
            time.sleep(max(0.0, nxt - time.monotonic()))
    done.set()
    reader.join()
    return {"received": len(latencies), "duplicates": dups[0],
            "p50_ms": round(percentile(latencies, 50), 2), "p99_ms": round(percentile(latencies, 99), 2)}


def create_delete(pub: Any, pairs: int) -> float:
    times = []
    for n in range(pairs):
        topic = f"projects/{PROJECT}/topics/cd-{n}"
        start = time.perf_counter()
        pub.create_topic(request={"name": topic}, timeout=60)
        pub.delete_topic(request={"topic": topic}, timeout=60)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure_server(url: str, messages: int, paced_count: int, pairs: int, publishers: int) -> dict[str, Any]:
    """Every measurement but memory and startup on the server at ``url``."""
    data = os.urandom(1024)
    topic, subscription = f"projects/{PROJECT}/topics/", f"projects/{PROJECT}/subscriptions/"
    with clients(url) as (pub, sub):
        for name in ("warm", "load", "paced"):
            pub.create_topic(request={"name": topic + name}, timeout=60)
            sub.create_subscription(request={"name": subscription + name, "topic": topic + name}, timeout=60)
        publish_all(url, topic + "warm", 500, publishers, data)  # JIT, lazy imports, connection pools
        drain(sub, subscription + "warm", 500)
        publish_rate = publish_all(url, topic + "load", messages, publishers, data)
        drained = drain(sub, subscription + "load", messages)
        latency = paced(url, topic + "paced", subscription + "paced", paced_count, 0.02)
        pair_ms = create_delete(pub, pairs)
    return {"publish_msgs_s": round(publish_rate, 1), "pull_ack_msgs_s": round(drained["msgs_s"], 1),
            "drain": drained, "duplicates": drained["duplicates"], "latency_p50_ms": latency["p50_ms"],
            "latency_p99_ms": latency["p99_ms"], "paced": latency, "create_delete_ms": round(pair_ms, 2)}


# -- processes: memory, startup ----------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def rss_tree_kib(pid: int) -> int:
    """VmRSS (KiB) of ``pid`` and its descendants."""
    kids, todo, total = _children(), [pid], 0
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, []))
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def listener_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:``port`` (Linux /proc), e.g. the emulator's JVM under gcloud."""
    inodes = set()
    for table_ in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table_).read_text().splitlines()[1:]:
                f = line.split()
                if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{f[9]}]")
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                for fd in (entry / "fd").iterdir():
                    with contextlib.suppress(OSError):
                        if os.readlink(fd) in inodes:
                            return int(entry.name)
    return None


def answers(url: str) -> bool:
    parsed = urlparse(url)
    try:
        conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=2)
        conn.request("GET", "/")
        conn.getresponse().read()
        conn.close()
        return True
    except OSError:
        return False


def one_run(server: str, start: Callable[[], contextlib.AbstractContextManager[tuple[str, int | None]]],
            **kw: Any) -> dict[str, Any]:
    began = time.monotonic()
    with start() as (url, own_pid):
        while not answers(url):
            time.sleep(0.05)
        startup = time.monotonic() - began
        out = measure_server(url, **kw)
        pid = own_pid or listener_pid(urlparse(url).port or 0)
        out["rss_mib"] = round(rss_tree_kib(pid) / 1024, 1) if pid else None
    out.update(server=server, startup_s=round(startup, 2))
    return out


@contextlib.contextmanager
def metro(logs: Path, n: int) -> Iterator[tuple[str, int | None]]:
    with tempfile.TemporaryDirectory(prefix="metro-versus-") as data, \
            stack_process(logs, f"versus-metro-{n}", {"METRO_DATA_DIR": data}) as (url, proc):
        yield url, proc.pid


@contextlib.contextmanager
def emulator(logs: Path) -> Iterator[tuple[str, int | None]]:
    with google_emulator(logs) as url:
        yield url, None  # the JVM, found by its listening port after the run


def measure(logs: Path, quick: bool, runs: int, with_emulator: bool = True, publishers: int = 4,
            say: Callable[[str], None] = print) -> dict[str, Any]:
    """``runs`` alternating runs on each server; the per-run figures, the medians, the targets."""
    kw = {"messages": 1000 if quick else 5000, "paced_count": 50 if quick else 200, "pairs": 5 if quick else 20,
          "publishers": publishers}
    skipped = None
    if not with_emulator:
        skipped = "not asked (--no-emulator)"
    elif shutil.which("gcloud") is None or shutil.which("java") is None:
        skipped = "gcloud (and java) are not installed: only Metro was measured"
    metro_runs: list[dict[str, Any]] = []
    emulator_runs: list[dict[str, Any]] = []
    for n in range(runs):
        metro_runs.append(one_run("metro", functools.partial(metro, logs, n), **kw))
        say(f"versus run {n + 1}/{runs}, Metro: {json.dumps(metro_runs[-1])}")
        if skipped is None:
            emulator_runs.append(one_run("emulator", lambda: emulator(logs), **kw))
            say(f"versus run {n + 1}/{runs}, emulator: {json.dumps(emulator_runs[-1])}")
    rows = summarize(metro_runs, emulator_runs)
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": quick, "runs": runs,
            "cpus": os.cpu_count(), "settings": {**kw, "message_bytes": 1024, "paced_interval_ms": 20},
            "emulator_skipped": skipped, "rows": rows, "targets": targets(rows),
            "duplicates": {"metro": sum(r["duplicates"] for r in metro_runs),
                           "emulator": sum(r["duplicates"] for r in emulator_runs) if emulator_runs else None},
            "metro_runs": metro_runs, "emulator_runs": emulator_runs}


def print_doc(console: Console, doc: dict[str, Any]) -> None:
    console.print(table(doc))
    for line in target_lines(doc):
        console.print(line)


@cli.command()
def main(quick: bool = typer.Option(False, "--quick", help="1,000 messages, 50 paced, 5 pairs."),
         runs: int = typer.Option(3, help="Runs on each server, alternating; medians are reported."),
         with_emulator: bool = typer.Option(True, "--emulator/--no-emulator", help="Also run Google's emulator."),
         out: Path = typer.Option(ROOT / "bench" / "out" / "versus.json", help="Where to write the figures.")) -> None:
    """Metro against Google's Pub/Sub emulator with the same REST driver."""
    doc = measure(out.parent / "versus-logs", quick, runs, with_emulator)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print_doc(Console(width=140), doc)
    print(f"wrote {out}")


if __name__ == "__main__":
    cli()
