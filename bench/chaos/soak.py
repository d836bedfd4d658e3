"""The soak: steady load at a fixed rate for many minutes, no faults; RSS of each process every minute,
latency percentiles and errors per minute (bench/chaos/timeline.py), and the ledger's verdicts at the end.

The rate is half the throughput of a flat-out calibration on the same stack (its own project, deleted after
it), unless given.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from bench.chaos.faultrun import drain
from bench.chaos.procs import LocalStack, rss_kib
from bench.chaos.rest import Client, Failed
from bench.chaos.subscriptions import TOPIC
from bench.chaos.traffic import Plan, Traffic


def _acked_everywhere(traffic: Traffic) -> int:
    with traffic.lock:
        return min(len(b.acked) for b in traffic.ledger.books.values())


def calibrate(stack: LocalStack, messages: int, console: Console) -> float:
    """Messages per second through all four subscriptions: ``messages`` published flat out, divided by the time
    until every subscription acknowledged every one of them (start-up included, so on the low side)."""
    traffic = Traffic(stack.url, Plan(messages=messages), project="calibrate")
    traffic.create()
    console.print(f"calibrating: {messages} messages flat out")
    traffic.start()
    while not traffic.publishing_done():
        time.sleep(0.5)
    drain(traffic, 600.0, lambda: None)
    elapsed = traffic.now()
    with traffic.lock:
        done = min(len(b.acked) for b in traffic.ledger.books.values())
    traffic.finish()
    client = Client(stack.url, "calibrate")
    for path in [f"subscriptions/{sub}" for sub in traffic.subs] + [f"topics/{TOPIC}"]:
        with contextlib.suppress(Failed):
            client.call("DELETE", path)
    rate = done / elapsed
    if rate <= 0:
        raise RuntimeError("the calibration acknowledged nothing: see the logs under bench/out/soak-logs")
    console.print(f"calibration: {done} messages through all four subscriptions in {elapsed:.0f} s: {rate:.1f} msg/s")
    return rate


def _sample(stack: LocalStack, minute: int) -> dict[str, int]:
    return {"minute": minute, **stack.rss_kib(), "driver": rss_kib(os.getpid())}


def run(stack: LocalStack, rate: float, minutes: float, console: Console,
        progress: Callable[[], Progress]) -> dict[str, Any]:
    plan = Plan(messages=max(1, int(rate * minutes * 60)), rate=rate)
    traffic = Traffic(stack.url, plan)
    traffic.create()
    samples = [_sample(stack, 0)]
    traffic.start()
    with progress() as bar:
        task = bar.add_task(f"soak at {rate:.1f} msg/s", total=plan.messages, note="")
        while not traffic.publishing_done():
            minute = int(traffic.now() // 60)
            if minute > samples[-1]["minute"]:
                samples.append(_sample(stack, minute))
            with traffic.lock:
                published, failures = len(traffic.ledger.published), sum(traffic.timeline.error_kinds.values())
            bar.update(task, completed=published, note=f"errors {failures}, RSS {samples[-1]}")
            time.sleep(1.0)
        drain_s = drain(traffic, 300.0, lambda: None)
    samples.append(_sample(stack, int(traffic.now() // 60) + 1))
    traffic.finish()
    with traffic.lock:
        summary = traffic.ledger.summary()
        rows = traffic.timeline.rows()
        errors = dict(traffic.timeline.error_kinds)
    roles = [k for k in samples[0] if k != "minute"]
    rss = {role: {"start": samples[0][role], "after_1_min": samples[min(1, len(samples) - 1)][role],
                  "end": samples[-1][role]} for role in roles}
    return {
        "rate_msgs_s": round(rate, 1), "minutes": minutes, "drain_s": round(drain_s, 1),
        "rss_kib": rss,
        "rss_samples": samples, "per_minute": rows, "errors": errors,
        **summary, "passed": summary["passed"] and not errors,
    }


def show(doc: dict[str, Any], console: Console) -> None:
    console.print(f"soak: {doc['minutes']} min at {doc['rate_msgs_s']} msg/s; published {doc['published_keys']}; "
                  f"errors {doc['errors'] or 'none'}; verdicts {'passed' if doc['passed'] else 'FAILED'}")
    for role, rss in doc["rss_kib"].items():
        console.print(f"  RSS {role:8} start {rss['start'] / 1024:6.1f} MiB  end {rss['end'] / 1024:6.1f} MiB")
    for row in doc["per_minute"]:
        console.print(f"  minute {row['minute']:3}: delivered {row['delivered']:6}  p50 {row['latency_p50_ms']} ms  "
                      f"p95 {row['latency_p95_ms']} ms  p99 {row['latency_p99_ms']} ms  errors {row['errors']}")


def chart(doc: dict[str, Any], path: Path) -> None:
    """Latency percentiles per minute, and RSS of each process per minute."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    rows = doc["per_minute"]
    minutes = [r["minute"] for r in rows]
    for q, style in ((50, "-"), (95, "--"), (99, ":")):
        ax1.plot(minutes, [r[f"latency_p{q}_ms"] for r in rows], style, label=f"p{q} publish -> delivery")
    ax1.plot(minutes, [r["publish_p99_ms"] for r in rows], "-.", label="p99 publish request")
    ax1.set(xlabel="minute", ylabel="ms", title=f"latency per minute at {doc['rate_msgs_s']} msg/s")
    ax1.set_yscale("log")
    ax1.legend(fontsize=8)
    samples = doc["rss_samples"]
    for role in doc["rss_kib"]:
        ax2.plot([s["minute"] for s in samples], [s[role] / 1024 for s in samples], marker=".", label=role)
    ax2.set(xlabel="minute", ylabel="RSS (MiB)", title="resident memory of each process")
    ax2.legend(fontsize=8)
    fig.suptitle(f"make soak, {doc['date']}: {doc['note'] or 'steady load, no faults'}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
