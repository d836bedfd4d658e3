"""What the local stack's durable state (METRO_DATA_DIR, chalicelib/local/durable/) costs and gives, measured on
real stacks (``python -m chalicelib.local``):

- publish throughput (1 KiB messages, requests of 100, four publishers) and the p50/p99 latency of one-message
  publishes, with persistence on and off, alternating stacks in the same run (medians over ``rounds``);
- the restart time against the number of messages stored: the stack filled, killed with SIGKILL (the journal
  replayed at start) or stopped cleanly (the snapshot loaded), then timed from its start to its first answer;
- the disk it takes per million 1 KiB messages (journal after the fill; snapshot after the clean stop).

Run alone: ``.venv/bin/python -m bench.durable_state [--quick]`` (writes bench/out/durable.json); ``make bench``
runs it (bench/run.py).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import typer

from bench.stack import ROOT, free_port
from bench.workload import percentile

cli = typer.Typer(add_completion=False)
TOPIC, SUB = "projects/durable/topics/bench", "projects/durable/subscriptions/bench"
BODY = base64.b64encode(os.urandom(1024)).decode()


@dataclass
class Stack:
    process: subprocess.Popen[bytes]
    url: str
    started_in: float  # seconds from the process's start to its first answer


def _env(data: Path | None, logs: Path, name: str) -> dict[str, str]:
    env = {**os.environ, "METRO_PORT": str(free_port()), "METRO_EMULATOR_PORT": str(free_port()),
           "METRO_AMS_PORT": str(free_port()), "METRO_AMS_CERT_DIR": str(logs / f"{name}-tls"),
           "METRO_AUTH": "open", "PYTHONUNBUFFERED": "1", "METRO_DATA_DIR": str(data) if data else "",
           "METRO_GRPC": "0"}
    env.pop("AWS_ENDPOINT_URL", None)
    return env


@contextmanager
def stack(data: Path | None, logs: Path, name: str) -> Iterator[Stack]:
    """A stack (``data``: durable there; None: in memory), stopped with SIGTERM at the end unless already gone."""
    logs.mkdir(parents=True, exist_ok=True)
    env = _env(data, logs, name)
    url = f"http://127.0.0.1:{env['METRO_PORT']}"
    started = time.perf_counter()
    with (logs / f"{name}.log").open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "chalicelib.local"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if requests.get(url + "/", timeout=1).ok:
                    break
            except requests.RequestException:
                time.sleep(0.05)
        if proc.poll() is not None:
            raise RuntimeError(f"the stack {name} did not start: {(logs / f'{name}.log').read_text()[-2000:]}")
        yield Stack(proc, url, time.perf_counter() - started)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(300)


def kill(s: Stack) -> None:
    s.process.send_signal(signal.SIGKILL)
    s.process.wait(30)


def _create(url: str) -> None:
    requests.put(f"{url}/v1/{TOPIC}", json={}, timeout=30).raise_for_status()
    requests.put(f"{url}/v1/{SUB}", json={"topic": TOPIC}, timeout=30).raise_for_status()


def fill(url: str, messages: int, publishers: int = 4, per_request: int = 100) -> float:
    """Publish ``messages`` of 1 KiB in requests of ``per_request``; returns messages per second."""
    requests_total = messages // per_request
    counter = iter(range(requests_total))
    lock = threading.Lock()
    body = {"messages": [{"data": BODY} for _ in range(per_request)]}

    def run() -> None:
        session = requests.Session()
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            session.post(f"{url}/v1/{TOPIC}:publish", json=body, timeout=60).raise_for_status()

    failures: list[BaseException] = []

    def guarded() -> None:
        try:
            run()
        except Exception as exc:  # reported below, after the other publishers stop
            failures.append(exc)

    started = time.perf_counter()
    threads = [threading.Thread(target=guarded) for _ in range(publishers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"{len(failures)} publishers failed: {failures[0]!r}")
    return requests_total * per_request / (time.perf_counter() - started)


def single_latencies_ms(url: str, count: int) -> list[float]:
    session, body, out = requests.Session(), {"messages": [{"data": BODY}]}, []
    for _ in range(count):
        started = time.perf_counter()
        session.post(f"{url}/v1/{TOPIC}:publish", json=body, timeout=30).raise_for_status()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def on_off(logs: Path, rounds: int, messages: int, singles: int) -> dict[str, Any]:
    """Publish throughput and one-message latency, persistence on against off, alternating."""
    runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for r in range(rounds):
        for mode in ("off", "on"):
            with tempfile.TemporaryDirectory() as tmp, \
                    stack(Path(tmp) / "data" if mode == "on" else None, logs, f"onoff-{mode}-{r}") as s:
                _create(s.url)
                rate = fill(s.url, messages)
                lat = single_latencies_ms(s.url, singles)
                runs[mode].append({"msg_per_s": rate, "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99)})
    med = {mode: {k: statistics.median(run[k] for run in rs) for k in rs[0]} for mode, rs in runs.items()}
    return {"runs": runs, "median": med,
            "throughput_ratio": med["on"]["msg_per_s"] / med["off"]["msg_per_s"],
            "p50_added_ms": med["on"]["p50_ms"] - med["off"]["p50_ms"]}


def restart(logs: Path, sizes: list[int]) -> list[dict[str, Any]]:
    """Per stored size: restart time after SIGKILL (journal replay) and after a clean stop (snapshot)."""
    out = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            with stack(data, logs, f"fill-{n}") as s:
                _create(s.url)
                fill(s.url, n)
                kill(s)
            journal_bytes = _dir_bytes(data)
            with stack(data, logs, f"replay-{n}") as s:
                replayed_in = s.started_in
                depth = _backlog(s.url)
            snapshot_bytes = _dir_bytes(data)  # the clean stop above folded the journal into a snapshot
            with stack(data, logs, f"snapshot-{n}") as s:
                loaded_in = s.started_in
            with stack(None, logs, f"empty-{n}") as s:
                empty_in = s.started_in
        out.append({"messages": n, "backlog_after_restart": depth, "empty_start_s": empty_in,
                    "replay_start_s": replayed_in, "snapshot_start_s": loaded_in, "journal_bytes": journal_bytes,
                    "snapshot_bytes": snapshot_bytes,
                    "journal_bytes_per_million": journal_bytes / n * 1e6,
                    "snapshot_bytes_per_million": snapshot_bytes / n * 1e6})
    return out


def _backlog(url: str) -> int:
    """The subscription's stored messages, as the AMS metrics count them (number_of_waiting_messages)."""
    answer = requests.get(f"{url}/v1/{SUB}:metrics", timeout=30).json()
    for metric in answer.get("metrics", []):
        if metric.get("metric") == "subscription.number_of_waiting_messages":
            return int(metric["timeseries"][0]["value"])
    return -1


def lines(result: dict[str, Any]) -> list[str]:
    m = result["on_off"]["median"]
    rows = [f"durable state: publish {m['on']['msg_per_s']:,.0f} msg/s on vs {m['off']['msg_per_s']:,.0f} off "
            f"({result['on_off']['throughput_ratio']:.2f}x); one-message p50 {m['on']['p50_ms']:.1f} ms on vs "
            f"{m['off']['p50_ms']:.1f} off (p99 {m['on']['p99_ms']:.1f} vs {m['off']['p99_ms']:.1f})"]
    for r in result["restart"]:
        rows.append(f"  {r['messages']:,} messages stored: start {r['replay_start_s']:.1f} s after kill -9 (replay), "
                    f"{r['snapshot_start_s']:.1f} s from the snapshot, {r['empty_start_s']:.1f} s empty; "
                    f"{r['journal_bytes_per_million'] / 2**30:.2f} GiB journal / "
                    f"{r['snapshot_bytes_per_million'] / 2**30:.2f} GiB snapshot per million")
    return rows


def measure(logs: Path, quick: bool) -> dict[str, Any]:
    rounds, messages, singles = (1, 1_000, 100) if quick else (3, 5_000, 300)
    sizes = [1_000] if quick else [10_000, 50_000]
    return {"on_off": on_off(logs, rounds, messages, singles), "restart": restart(logs, sizes)}


@cli.command()
def main(quick: bool = typer.Option(False, "--quick", help="One round, fewer messages.")) -> None:
    out = ROOT / "bench" / "out"
    logs = out / "durable-logs"
    shutil.rmtree(logs, ignore_errors=True)
    result = measure(logs, quick)
    (out / "durable.json").write_text(json.dumps(result, indent=2))
    print("\n".join(lines(result)))


if __name__ == "__main__":
    cli()
