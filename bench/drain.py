"""Two costs of the local stack (``make run``) that grow where they should not, measured on a fresh stack each run.

- ``drain``: publish ``messages`` messages of ``size`` bytes into one subscription, then drain it with
  google-cloud-pubsub's REST transport (Pull of up to ``max_messages``, then Acknowledge of what came), as a
  client of Google's emulator would. Reported: the stack process's CPU seconds (user + system, from
  /proc/<pid>/stat) and the wall time of the drain alone. moto's SQS receive used to cost O(backlog) per
  message received (docs/decisions/moto-receive-cost.md).
- ``keepalive``: ``requests`` sequential requests on one kept-alive ``http.client`` connection, a cheap GET
  (``GET /``) and a one-message publish; reported: the median and p90 per request in milliseconds. A server that
  writes an answer in two sends without TCP_NODELAY stalls each one ~40 ms (Nagle's algorithm against the
  client's delayed acknowledgement).

Run: ``.venv/bin/python -m bench.drain [--runs 3] [--messages 5000]`` (writes bench/out/drain.json).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import typer

from bench.grpc_bench import stack_process
from bench.metro import MetroClient
from bench.stack import ROOT

PROJECT = "bench"
cli = typer.Typer(add_completion=False)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fill(url: str, topic: str, sub: str, messages: int, size: int) -> None:
    client = MetroClient(url, project=PROJECT)
    client.create(topic, [sub], ack_deadline=60)
    data = base64.b64encode(os.urandom(size)).decode()
    for start in range(0, messages, 100):
        batch = [{"data": data, "attributes": {"n": str(n)}} for n in range(start, min(messages, start + 100))]
        client.call("POST", f"projects/{PROJECT}/topics/{topic}:publish", {"messages": batch})


def rest_subscriber(url: str) -> Any:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import pubsub_v1

    return pubsub_v1.SubscriberClient(transport="rest", credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                                      client_options=ClientOptions(api_endpoint=url))


def drain(url: str, sub: str, expected: int, max_messages: int) -> int:
    """Pull and acknowledge until ``expected`` messages came (or 30 empty pulls in a row); returns the count."""
    subscriber = rest_subscriber(url)
    path = f"projects/{PROJECT}/subscriptions/{sub}"
    got, empty = 0, 0
    try:
        while got < expected and empty < 30:
            answer = subscriber.pull(request={"subscription": path, "max_messages": max_messages,
                                              "return_immediately": False}, timeout=60)
            ids = [m.ack_id for m in answer.received_messages]
            if not ids:
                empty += 1
                continue
            empty = 0
            subscriber.acknowledge(request={"subscription": path, "ack_ids": ids}, timeout=60)
            got += len(ids)
    finally:
        subscriber.api.transport.close()  # SubscriberClient.close() closes a gRPC channel, which REST has not
    return got


def drain_run(messages: int, size: int, max_messages: int, logs: Path, n: int) -> dict[str, Any]:
    with stack_process(logs, f"drain-{n}", {}) as (url, proc):
        fill(url, "drain", "drain-sub", messages, size)
        time.sleep(1.0)  # fan-out of the last publishes is direct; let the pumps settle
        cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
        got = drain(url, "drain-sub", messages, max_messages)
        wall, cpu = time.monotonic() - wall0, cpu_seconds(proc.pid) - cpu0
    return {"messages": got, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def keepalive_run(requests: int, logs: Path, n: int) -> dict[str, Any]:
    with stack_process(logs, f"keepalive-{n}", {}) as (url, _):
        MetroClient(url, project=PROJECT).create("keepalive", ["keepalive-sub"])
        parsed = urlparse(url)
        conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port)
        body = json.dumps({"messages": [{"data": base64.b64encode(b"x" * 64).decode()}]})
        out: dict[str, Any] = {}
        publish = f"/v1/projects/{PROJECT}/topics/keepalive:publish"
        for name, method, path, payload in (("get", "GET", "/", None), ("publish", "POST", publish, body)):
            times = []
            for _ in range(requests):
                start = time.perf_counter()
                conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                times.append((time.perf_counter() - start) * 1000)
                if resp.status != 200:
                    raise RuntimeError(f"{method} {path}: HTTP {resp.status}")
            times.sort()
            out[name] = {"p50_ms": round(statistics.median(times), 2),
                         "p90_ms": round(times[int(len(times) * 0.9)], 2)}
        conn.close()
    return out


@cli.command()
def main(runs: int = typer.Option(3, help="Fresh stacks per measurement; medians are reported."),
         messages: int = typer.Option(5000, help="Messages published, then drained."),
         size: int = typer.Option(1024, help="Bytes per message."),
         max_messages: int = typer.Option(100, help="maxMessages of each pull."),
         requests: int = typer.Option(200, help="Requests per keep-alive measurement."),
         what: str = typer.Option("both", help="drain, keepalive or both."),
         out: Path = typer.Option(ROOT / "bench" / "out" / "drain.json")) -> None:
    logs = out.parent / "drain-logs"
    result: dict[str, Any] = {}
    if what in ("keepalive", "both"):
        ka = [keepalive_run(requests, logs, n) for n in range(runs)]
        result["keepalive"] = {"runs": ka, "median": {
            k: {m: statistics.median(r[k][m] for r in ka) for m in ("p50_ms", "p90_ms")} for k in ("get", "publish")}}
        print("keepalive", json.dumps(result["keepalive"]["median"]), flush=True)
    if what in ("drain", "both"):
        dr = []
        for n in range(runs):
            dr.append(drain_run(messages, size, max_messages, logs, n))
            print("drain run", json.dumps(dr[-1]), flush=True)
        result["drain"] = {"runs": dr, "median": {k: statistics.median(r[k] for r in dr) for k in ("wall_s", "cpu_s")}}
        print("drain", json.dumps(result["drain"]["median"]), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    cli()
