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


@cli.command()
def chaos(
    messages: int = typer.Option(100_000, help="Messages to publish (each goes to four subscriptions)."),
    publishers: int = typer.Option(3, help="Publisher threads."),
    pullers: int = typer.Option(2, help="Puller threads per pull subscription."),
    fault_rate: float = typer.Option(0.05, help="Share of AWS requests that fail (throttling, 500s, timeouts)."),
    kill_min: float = typer.Option(2.0, help="Least seconds between a recovery and the next kill."),
    kill_max: float = typer.Option(6.0, help="Most seconds between a recovery and the next kill."),
    drain_timeout: float = typer.Option(300.0, help="Seconds to wait, after publishing, for every ack."),
    kills: bool = typer.Option(True, help="Kill and restart the API and the pumps (--no-kills: faults only)."),
    record: bool = typer.Option(False, help="Write bench/chaos.json (tracked) instead of bench/out/chaos.json."),
) -> None:
    """Publish MESSAGES while the API and the pumps are killed and restarted at random; exit 1 on a failed verdict."""
    stack = LocalStack(OUT / "chaos-logs", fault_rate=fault_rate)
    sqs_trace = OUT / "chaos-logs" / "sqs-trace.jsonl"  # the emulator's side of the ordered trace (sqs_trace.py)
    sqs_trace.unlink(missing_ok=True)
    os.environ["METRO_CHAOS_SQS_TRACE"] = str(sqs_trace)
    plan = Plan(messages=messages, publishers=publishers, pullers=pullers)
    started = time.monotonic()
    console.print(f"starting emulator, API and pumps (fault rate {fault_rate:.0%}); logs in {stack.workdir}")
    stack.start()
    traffic = Traffic(stack.url, plan)
    traffic.trace = (OUT / "chaos-logs" / "ordered-trace.jsonl").open("w")
    killer = faultrun.Killer(stack, traffic, every=(kill_min, kill_max), enabled=kills)
    try:
        traffic.create()
        traffic.start()
        killer.start()
        with _progress() as bar:
            task = bar.add_task("published", total=messages, note="")

            def tick() -> None:
                with traffic.lock:
                    acked = {sub: len(b.acked) for sub, b in traffic.ledger.books.items()}
                    published = len(traffic.ledger.published)
                bar.update(task, completed=published, note=f"acked {acked}, kills {len(killer.kills)}")

            while not traffic.publishing_done():
                tick()
                time.sleep(0.5)
            publish_s = traffic.now()
            killer.stop.set()
            bar.update(task, description="draining")
            drain_s = faultrun.drain(traffic, drain_timeout, tick, lambda: faultrun.backlog(stack))
            tick()
        traffic.finish()
        traffic.trace.close()
        doc = faultrun.report(traffic, killer, stack,
                              {"publishing": publish_s, "drain": drain_s, "total": time.monotonic() - started})
    finally:
        killer.stop.set()
        traffic.stop.set()
        stack.stop()
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "machine": machine(), **doc}
    path = _write(doc, "chaos.json", record)
    _show_chaos(doc)
    console.print(f"wrote {path}")
    sys.exit(0 if doc["passed"] else 1)


def _show_chaos(doc: dict[str, Any]) -> None:
    console.print(f"published (acknowledged) {doc['published_keys']} in {doc['timings_s']['publishing']} s, "
                  f"drained in {doc['timings_s']['drain']} s, backlog left {doc['backlog_after_drain']}; "
                  f"faults injected: {doc['injected']}")
    for sub, v in doc["subscriptions"].items():
        console.print(f"  {sub:8} {v['kind']:13} deliveries {v['deliveries']:7}  lost {v['lost']}  stuck "
                      f"{v['stuck']}  unconfirmed {v['unconfirmed']}  duplicates {v['duplicates']}  "
                      f"after-ack {v['after_ack']}  order violations {v['order_violations']}  "
                      f"{'ok' if v['passed'] else 'FAILED'}")
    console.print(f"kills and recovery: {doc['recovery']}")


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
