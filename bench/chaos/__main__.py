"""``python -m bench.chaos``: Metro's fault run (``make chaos``) and soak (``make soak``).

Both start the local stack as three processes (emulator, API, pumps; bench/chaos/procs.py) on free ports and
drive one topic with a pull, an ordered, an exactly-once and a push subscription (bench/chaos/traffic.py).
They write under bench/out/ (untracked); ``--record`` writes the tracked figures in bench/ instead.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from bench.chaos import faultrun, soak
from bench.chaos.nemesis import KINDS, Nemesis
from bench.chaos.procs import LocalStack
from bench.chaos.traffic import Plan, Traffic
from bench.run import machine

HERE = Path(__file__).resolve().parents[1]
OUT = HERE / "out"
cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
console = Console()


class _Progress(Progress):
    """rich's progress bar; where the output is no terminal (CI, a log file), a plain line every 15 s instead."""

    _last = 0.0

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        if not self.console.is_terminal and time.monotonic() - self._last >= 15:
            self._last = time.monotonic()
            task = self.tasks[task_id]
            print(f"{task.description}: {task.completed:.0f}/{task.total:.0f} {task.fields.get('note', '')}",
                  flush=True)


def _progress() -> Progress:
    return _Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                     TextColumn("{task.fields[note]}"), console=console)


def _write(doc: dict[str, Any], name: str, record: bool) -> Path:
    path = (HERE if record else OUT) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


ALL_FAULTS = ",".join((*KINDS, "torn"))  # the nemesis's kinds, and the torn writes the processes inflict


@cli.command()
def chaos(
    messages: int = typer.Option(100_000, help="Messages to publish (each goes to every subscription it matches)."),
    publishers: int = typer.Option(3, help="Publisher threads."),
    rate: float = typer.Option(0.0, help="Messages per second (0: as fast as flow control allows); a short run "
                               "paced slower lasts long enough for the faults to reach it."),
    pullers: int = typer.Option(2, help="Puller threads per REST or AMS pull subscription."),
    fault_rate: float = typer.Option(0.05, help="Share of AWS requests that fail (throttling, 500s, timeouts)."),
    faults: str = typer.Option(ALL_FAULTS, help="Fault kinds, comma-separated: kill, pause, partition, skew, "
                               "torn (torn writes); '' for AWS faults only."),
    crash_rate: float = typer.Option(0.003, help="With torn: chance that a torn-write point kills its process."),
    subscriptions: str = typer.Option("full", help="full (every edge, filters, dead letters, seeks) or basic."),
    fault_min: float = typer.Option(2.0, help="Least seconds between the end of a fault and the next."),
    fault_max: float = typer.Option(6.0, help="Most seconds between the end of a fault and the next."),
    drain_timeout: float = typer.Option(300.0, help="Seconds to wait, after publishing, for every ack."),
    record: bool = typer.Option(False, help="Write bench/chaos.json (tracked) instead of bench/out/chaos.json."),
) -> None:
    """Publish MESSAGES under FAULTS, then drain and judge the history; exit 1 on a failed verdict."""
    kinds = tuple(k for k in faults.split(",") if k)
    unknown = set(kinds) - set(ALL_FAULTS.split(","))
    if unknown:
        raise typer.BadParameter(f"unknown fault kinds: {sorted(unknown)}")
    logs = OUT / "chaos-logs"
    stack = LocalStack(logs, fault_rate=fault_rate, partitions="partition" in kinds, skew="skew" in kinds,
                       crash_rate=crash_rate if "torn" in kinds else 0.0)
    sqs_trace = logs / "sqs-trace.jsonl"  # the emulator's side of the ordered trace (sqs_trace.py)
    sqs_trace.unlink(missing_ok=True)
    os.environ["METRO_CHAOS_SQS_TRACE"] = str(sqs_trace)
    full = subscriptions == "full"
    plan = Plan(messages=messages, publishers=publishers, rate=rate, pullers=pullers, subscriptions=subscriptions,
                large_every=10 if full else 0, stale_rate=0.01 if full else 0.0, seek_every=30.0 if full else 0.0,
                stale_wait=1 + skew_tolerance(kinds))
    started = time.monotonic()
    console.print(f"starting emulator, API and pumps (AWS fault rate {fault_rate:.0%}, faults {kinds or 'none'}); "
                  f"logs in {stack.workdir}")
    stack.start()
    traffic = Traffic(stack.url, plan, ams_url=stack.ams_url, history=(logs / "history.jsonl").open("w", buffering=1))
    traffic.trace = (logs / "ordered-trace.jsonl").open("w")
    traffic.workdir = logs  # the streamed subscription's subscriber runs as a process, which pauses can freeze
    nemesis = Nemesis(stack, traffic, tuple(k for k in kinds if k != "torn"), every=(fault_min, fault_max))
    try:
        timings = _run(stack, traffic, nemesis, drain_timeout)
        console.print(f"checking the history ({len(traffic.history.ops)} operations)")
        checked = check_history(traffic, skew_tolerance(kinds))
        timings["total"] = time.monotonic() - started
        doc = faultrun.report(traffic, nemesis, stack, timings, checked)
    finally:
        nemesis.stop.set()
        traffic.stop.set()
        stack.stop()
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "machine": machine(), **doc}
    path = _write(doc, "chaos.json", record)
    _show_chaos(doc)
    console.print(f"wrote {path}")
    sys.exit(0 if doc["passed"] else 1)


def _run(stack: LocalStack, traffic: Traffic, nemesis: Nemesis, drain_timeout: float) -> dict[str, float]:
    """Publish under the nemesis, then drain; returns the phases' seconds."""
    traffic.create()
    traffic.start()
    nemesis.start()
    with _progress() as bar:
        task = bar.add_task("published", total=traffic.plan.messages, note="")

        def tick() -> None:
            with traffic.lock:
                acked = {sub: len(b.acked) for sub, b in traffic.ledger.books.items()}
                published = len(traffic.ledger.published)
            bar.update(task, completed=published, note=f"acked {acked}, faults {len(nemesis.faults)}")

        while not traffic.publishing_done():
            tick()
            time.sleep(0.5)
        publish_s = traffic.now()
        nemesis.stop.set()
        bar.update(task, description="draining")
        drain_s = faultrun.drain(traffic, drain_timeout, tick, lambda: faultrun.backlog(stack))
        tick()
    with traffic.lock:
        drained = traffic.ledger.drained()
    traffic.finish(drained=drained and faultrun.backlog(stack) == 0)
    if traffic.trace is not None:
        traffic.trace.close()
    return {"publishing": publish_s, "drain": drain_s}


def skew_tolerance(kinds: tuple[str, ...]) -> float:
    """How late (s) an exactly-once acknowledgement may be accepted: 1 s, plus twice the largest clock offset
    when clocks are skewed (a lease written at +x and judged at -x)."""
    if "skew" not in kinds:
        return 1.0
    from bench.chaos.skew import SKEWS

    return 1.0 + 2 * max(abs(float(x)) for spec in SKEWS for x in [spec.get("offset", 0), *spec.get("strobe", [])])


def check_history(traffic: Traffic, tolerance: float) -> dict[str, Any]:
    from bench.chaos.checker import check

    result: dict[str, Any] = check(traffic.history.ops, skew_tolerance=tolerance).to_dict()
    return result


def _show_chaos(doc: dict[str, Any]) -> None:
    console.print(f"published (acknowledged) {doc['published_keys']} in {doc['timings_s']['publishing']} s, "
                  f"drained in {doc['timings_s']['drain']} s, backlog left {doc['backlog_after_drain']}; "
                  f"AWS faults injected: {doc['injected']}")
    console.print(f"faults: {doc['faults']['counts']}; torn-write crashes: {doc['crash_points']}")
    for sub, v in doc["subscriptions"].items():
        console.print(f"  {sub:8} {v['kind']:13} deliveries {v['deliveries']:7}  lost {v['lost']}  stuck "
                      f"{v['stuck']}  unconfirmed {v['unconfirmed']}  duplicates {v['duplicates']}  "
                      f"after-ack {v['after_ack']}  order violations {v['order_violations']}  "
                      f"{'ok' if v['passed'] else 'FAILED'}")
    console.print(f"kills and recovery: {doc['recovery']}")
    history = doc["history"]
    console.print(f"history checker: {'passed' if history['passed'] else 'FAILED'}; violations by rule: "
                  f"{history.get('violations_by_rule', history.get('summary', {}))}")


@cli.command(name="check")
def check_command(
    history: Path = typer.Argument(OUT / "chaos-logs" / "history.jsonl", help="A fault run's recorded history."),
    tolerance: float = typer.Option(skew_tolerance(tuple(ALL_FAULTS.split(","))),
                                    help="Seconds an exactly-once acknowledgement may be late (skewed clocks)."),
) -> None:
    """Judge a recorded history again (after a change to the checker, or to study a failed run)."""
    from bench.chaos.checker import check
    from bench.chaos.history import read

    report = check(read(history), skew_tolerance=tolerance).to_dict()
    console.print_json(json.dumps({k: report[k] for k in ("passed", "drained", "not_judged", "violations_by_rule")}))
    for group in report["violations"]:
        for example in group["examples"][:3]:
            console.print(f"{group['rule']} on {group['sub']}: {example['detail']}")
    sys.exit(0 if report["passed"] else 1)


@cli.command(name="soak")
def soak_command(
    minutes: float = typer.Option(30.0, help="Minutes of steady load."),
    rate: float = typer.Option(0.0, help="Messages per second; 0: half the throughput a calibration measures."),
    calibrate_messages: int = typer.Option(1500, help="Messages of the flat-out calibration (when --rate 0)."),
    note: str = typer.Option("", help="A note stored with the figures (e.g. what else ran on the machine)."),
    record: bool = typer.Option(False, help="Write bench/soak.json and bench/soak.png instead of bench/out/."),
) -> None:
    """Steady load for MINUTES: RSS of each process, latency percentiles per minute, errors."""
    stack = LocalStack(OUT / "soak-logs")
    console.print(f"starting emulator, API and pumps; logs in {stack.workdir}")
    stack.start()
    try:
        measured = rate * 2 if rate else soak.calibrate(stack, calibrate_messages, console)
        doc = soak.run(stack, measured / 2, minutes, console, _progress)
    finally:
        stack.stop()
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "machine": machine(), "note": note,
           "measured_throughput_msgs_s": round(measured, 1), **doc}
    path = _write(doc, "soak.json", record)
    soak.chart(doc, path.with_suffix(".png"))
    soak.show(doc, console)
    console.print(f"wrote {path} and {path.with_suffix('.png')}")
    sys.exit(0 if doc["passed"] else 1)


if __name__ == "__main__":
    threading.current_thread().name = "chaos-main"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the stack's processes on the way out
    cli()
