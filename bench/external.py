"""The same publish workload through ``make run``'s stack twice: on its embedded emulator, and on a stock moto
server in its own process (``AWS_ENDPOINT_URL=... make run``, as a user who brings an emulator runs it).

Each side is a fresh ``python -m chalicelib.local`` process on free ports (the external moto server too, started
as ``moto_server`` and stopped afterwards). The workload: one topic, ``subscriptions`` subscriptions, one
publisher sending 10-message requests back to back for ``seconds``, one puller per subscription pulling and
acknowledging as it goes (a drained backlog, as in scenario A). Reported: publish requests per second on each
side and their ratio (target: the external side within 2x). docs/decisions/external-emulator.md has the figures.

Run alone: ``.venv/bin/python -m bench.external``; ``make bench`` runs it after the scenarios.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
import typer

from bench.metro import MetroClient, payloads
from bench.stack import ROOT, free_port

MESSAGES_PER_REQUEST = 10
TARGET_RATIO = 2.0
cli = typer.Typer(add_completion=False)


def _wait_listening(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process serving it exited with {proc.returncode}")
        with contextlib.suppress(requests.RequestException):
            requests.get(url, timeout=1)
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {url} after {timeout} s")


@contextlib.contextmanager
def _process(args: list[str], env: dict[str, str], url: str, log: Path) -> Iterator[None]:
    """A child process that serves ``url``; stopped (and waited for) on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_listening(url, proc, 90)
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@contextlib.contextmanager
def metro(endpoint: str | None, logs: Path) -> Iterator[str]:
    """``make run``'s stack on free ports: on its embedded emulator, or on ``endpoint``; yields its URL."""
    port = free_port()
    env = {**os.environ, "METRO_PORT": str(port), "METRO_EMULATOR_PORT": str(free_port()),
           "METRO_HOST": "127.0.0.1", "METRO_AUTH": "open", "PYTHONUNBUFFERED": "1"}
    env.pop("AWS_ENDPOINT_URL", None)
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    url = f"http://127.0.0.1:{port}"
    name = "external" if endpoint else "embedded"
    with _process([sys.executable, "-m", "chalicelib.local"], env, url, logs / f"metro-{name}.log"):
        yield url


@contextlib.contextmanager
def moto_server(logs: Path) -> Iterator[str]:
    """A stock moto server (no Metro patches) in its own process; yields its endpoint URL."""
    port = free_port()
    binary = Path(sys.executable).with_name("moto_server")
    endpoint = f"http://127.0.0.1:{port}"
    with _process([str(binary), "-H", "127.0.0.1", "-p", str(port)], dict(os.environ), endpoint + "/moto-api/",
                  logs / "moto-server.log"):
        yield endpoint


def workload(url: str, seconds: float, subscriptions: int, drain: bool = True) -> dict[str, Any]:
    """Publish 10-message requests for ``seconds`` while pullers drain every subscription (or, without
    ``drain``, while the backlog grows)."""
    client = MetroClient(url)
    subs = [f"ext-sub-{i}" for i in range(subscriptions)]
    client.create("ext-topic", subs)
    body = {"messages": [{"data": d} for d in payloads(1024, MESSAGES_PER_REQUEST)]}
    stop = threading.Event()
    consumed = [0] * subscriptions

    def pull(i: int) -> None:
        puller = MetroClient(url)
        path = f"projects/{puller.project}/subscriptions/{subs[i]}"
        while not stop.is_set():
            got = puller.call("POST", path + ":pull", {"maxMessages": 100}).get("receivedMessages", [])
            if got:
                puller.call("POST", path + ":acknowledge", {"ackIds": [m["ackId"] for m in got]})
                consumed[i] += len(got)

    threads = [threading.Thread(target=pull, args=(i,), daemon=True) for i in range(subscriptions if drain else 0)]
    for t in threads:
        t.start()
    requests_sent = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        client.call("POST", f"projects/{client.project}/topics/ext-topic:publish", body)
        requests_sent += 1
    elapsed = time.monotonic() - started
    stop.set()
    for t in threads:
        t.join(30)
    return {"publish_requests": requests_sent, "seconds": round(elapsed, 1),
            "publish_requests_s": round(requests_sent / elapsed, 2),
            "messages_s": round(requests_sent * MESSAGES_PER_REQUEST / elapsed, 1), "consumed": sum(consumed)}


def compare(seconds: float, subscriptions: int, logs: Path, drain: bool = True) -> dict[str, Any]:
    """The workload on the embedded stack, then on a stock moto server; both rates and their ratio."""
    logs.mkdir(parents=True, exist_ok=True)
    with metro(None, logs) as url:
        embedded = workload(url, seconds, subscriptions, drain)
    with moto_server(logs) as endpoint, metro(endpoint, logs) as url:
        external = workload(url, seconds, subscriptions, drain)
    ratio = embedded["publish_requests_s"] / max(external["publish_requests_s"], 1e-9)
    return {"seconds": seconds, "subscriptions": subscriptions, "drained": drain,
            "messages_per_request": MESSAGES_PER_REQUEST,
            "embedded": embedded, "external_moto": external, "ratio": round(ratio, 2),
            "target_ratio": TARGET_RATIO, "met": ratio <= TARGET_RATIO}


def target(result: dict[str, Any]) -> dict[str, Any]:
    """The row of the benchmark's targets table."""
    return {"target": "make run on a stock moto server: publish rate within 2x of the embedded stack's",
            "value": result["ratio"], "limit": TARGET_RATIO, "met": result["met"]}


def summary(result: dict[str, Any]) -> str:
    e, x = result["embedded"], result["external_moto"]
    drained = "drained" if result["drained"] else "undrained"
    return (f"publish, {result['messages_per_request']}-message requests, {result['subscriptions']} {drained} "
            f"subscription(s): embedded {e['publish_requests_s']}/s, stock moto server {x['publish_requests_s']}/s, "
            f"ratio {result['ratio']} (target <= {result['target_ratio']})")


@cli.command()
def main(seconds: float = typer.Option(20.0, help="Seconds of publishing on each side."),
         subscriptions: int = typer.Option(1, help="Subscriptions of the topic (each drained by one puller)."),
         drain: bool = typer.Option(True, help="Pull and acknowledge while publishing (--no-drain: a growing "
                                    "backlog)."),
         out: Path = typer.Option(ROOT / "bench" / "out" / "external.json", help="Where to write the figures.")
         ) -> None:
    """Compare make run's publish rate on its embedded emulator and on a stock moto server."""
    print(f"publishing for {seconds:.0f} s on the embedded stack, then on a stock moto server ...", flush=True)
    result = compare(seconds, subscriptions, out.parent / "external-logs", drain)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(summary(result))
    print(f"wrote {out}")


if __name__ == "__main__":
    cli()
