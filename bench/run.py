"""``python -m bench.run``: benchmark Metro on the embedded stack, count its AWS requests, price them.

Scenarios (``--quick``: a few hundred messages each, for CI):
  A  10,000 messages of 1 KiB, published 100 per request, one pull subscription (maxMessages=100)
  B  the same with 3 subscriptions (fan-out)
  C  2,000 messages of 64 KiB, one subscription
  A-order, A-exact, A-push  3,000 messages of A on one subscription with enableMessageOrdering (8 keys,
     FIFO queue), with enableExactlyOnceDelivery, and pushing to a local webhook: compared with A
  A-keys  3,000 messages of A served with METRO_AUTH=keys (run right after A): a publisher and a consumer
     user on the topic's and the subscription's ACLs, their tokens in x-api-key: $/M, AWS requests per
     message and API handler p50 against A
  A-schema  3,000 messages of A to a topic with an Avro schema (JSON encoding): every publish is checked
  A-stream  A's load consumed by google-cloud-pubsub's subscribe() over gRPC (StreamingPull) instead of REST pull
  A-2k, A-4k, A-8k  A's workload at 2, 4 and 8 KiB (quick: A-4k only), for the size from which Metro's bill is
     below Google's (bench/crossover.py; the ``crossover`` key)
and the schema figures of bench/schema_bench.py: checks per second on one core for each schema type and
encoding (1 KiB messages), and the CPU checking adds to a 100-message publish;
and, on the same emulator in the same run, the baselines they are compared with: raw SQS (1 KiB and
64 KiB) and SNS -> 3 SQS queues; and the gRPC edge's figures (bench/grpc_bench.py: the same delivery driver on
Google's emulator when gcloud is installed, the HTTP/2 preface check's cost to REST requests, memory per open
StreamingPull stream); and, in full runs only, Metro beside Google's emulator with one REST driver
(bench/versus.py: publish and pull + ack throughput, paced latency, create + delete, RSS, startup; the
``versus`` key), and what the durable local state costs (bench/durable_state.py; the ``durable_state``
key). Writes bench/out/results.json and bench/out/chart.png (quick runs: bench/out/results-quick.json and
bench/out/chart-quick.png; bench/out/ is not tracked); ``--record`` writes the tracked figures,
bench/results.json and bench/chart.png, instead. Exits 1 when a scenario did not complete, and with ``--check``
also when a target is missed.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from bench import (
    chart,
    crossover,
    durable_state,
    experiments,
    external,
    grpc_bench,
    pricing,
    report,
    scenarios,
    schema_bench,
    seek,
    versus,
)
from bench.stack import BenchStack

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"  # untracked: where runs write unless --record
cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gib = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for pkg in ("moto", "boto3", "botocore", "chalice", "requests"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"platform": platform.platform(), "python": sys.version.split()[0], "cpu": cpu,
            "cpus": os.cpu_count(), "memory_gib": mem_gib, "packages": versions}


def progress_of(progress: Progress, task: TaskID) -> Callable[[int], None]:
    """A callback that moves ``task``'s bar to the number of messages done."""

    def advance(done: int) -> None:
        progress.update(task, completed=done)

    return advance


def output_paths(quick: bool, record: bool, out: Path | None, chart_path: Path | None) -> tuple[Path, Path]:
    """Where a run writes its JSON and chart: the tracked figures only when asked to record them."""
    if out is None:
        out = HERE / "results.json" if record else OUT / ("results-quick.json" if quick else "results.json")
    if chart_path is None:
        chart_path = out.parent / (out.stem.replace("results", "chart", 1) + ".png")
    return out, chart_path


def run_external(console: Console, doc: dict[str, Any], seconds: float, out_dir: Path) -> None:
    """The publish workload on the embedded stack and on a stock moto server (bench/external.py), into ``doc``."""
    console.print("external emulator: the publish workload on the embedded stack, then on a stock moto server ...")
    doc["external_emulator"] = external.compare(seconds, 1, out_dir / "external-logs")
    doc["targets"].append(external.target(doc["external_emulator"]))
    console.print(external.summary(doc["external_emulator"]))


@cli.command()
def main(
    quick: bool = typer.Option(False, "--quick", help="A few hundred messages per scenario (CI; < 60 s)."),
    out: Path | None = typer.Option(None, "--out", help="results JSON (default bench/out/results[-quick].json)."),
    record: bool = typer.Option(False, "--record", help="Write the tracked bench/results.json and bench/chart.png."),
    chart_path: Path | None = typer.Option(None, "--chart", help="chart PNG (default: next to the JSON)."),
    only: str = typer.Option("", help="Comma-separated runs to do, e.g. 'A,sqs-1k' (default: all)."),
    publishers: int = typer.Option(4, help="Publisher threads."),
    consumers: int = typer.Option(4, help="Puller threads per subscription."),
    window: int = typer.Option(300, help="Flow control: most messages published but not yet acked (0: none)."),
    pull_wait: int = typer.Option(0, help="Long-poll seconds of a pull (METRO_PULL_WAIT_SECONDS, SQS wait); "
                                  "default 1 quick, 2 full."),
    timeout: float = typer.Option(0, help="Seconds a scenario may take (default 120 quick, 900 full)."),
    scale: float = typer.Option(1.0, help="Multiply every scenario's message count (experiments)."),
    probe: int = typer.Option(-1, help="Publish requests of the paced latency probe (default 2 quick, 20 full)."),
    moto_speedup: bool = typer.Option(True, help="Patch moto's SQS clock (chalicelib/local/moto_speedups.py)."),
    patch: str = typer.Option("", help="Comma-separated proposals to try in-process (see bench/experiments.py)."),
    check: bool = typer.Option(False, "--check", help="Exit 1 when a target is missed."),
    detail: bool = typer.Option(True, help="Print the per-operation request tables."),
    seek_messages: int = typer.Option(-1, help="Messages of the seek run (default 10,000; 1,000 quick; 0: none)."),
    validation: bool = typer.Option(True, help="Measure schema validation per core (bench/schema_bench.py)."),
    external_seconds: float = typer.Option(-1, "--external", help="Seconds of the publish workload on the embedded "
                                           "stack and on a stock moto server (bench/external.py; 0: skip; default "
                                           "10 quick, 20 full)."),
    grpc: bool = typer.Option(True, help="Measure the gRPC edge: the HTTP/2 preface check's cost, memory per "
                              "StreamingPull stream, delivery on Google's emulator (bench/grpc_bench.py)."),
    durable: bool = typer.Option(True, help="Measure the durable local state (bench/durable_state.py; full runs "
                                 "only)."),
    versus_runs: int = typer.Option(3, help="Runs on each side of Metro against Google's emulator, same REST "
                                    "driver (bench/versus.py; full runs only; 0: skip)."),
) -> None:
    """Run the scenarios and the baselines; print, save and chart the figures."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    for noisy in ("botocore", "urllib3", "moto", "metro"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    # moto is not thread-safe: a rare request fails with a 500 that botocore retries (counted as an attempt)
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    console = Console(width=None if sys.stdout.isatty() else 140)
    out, chart_path = output_paths(quick, record, out, chart_path)
    pull_wait = pull_wait or (1 if quick else 2)
    settings = scenarios.Settings(publishers, consumers, window, pull_wait, timeout or (120 if quick else 900),
                                  probe_requests=probe if probe >= 0 else (2 if quick else 20),
                                  probe_seconds=5.0 if quick else 60.0,
                                  probe_only={"sqs-1k", "A", "A-stream"} if quick else None)
    wanted = {s.strip() for s in only.split(",") if s.strip()}
    todo = [s for s in scenarios.plan(quick, scale) if not wanted or s.key in wanted]

    started = time.perf_counter()
    console.print(f"[b]Metro benchmark[/b] ({'quick' if quick else 'full'}): starting the embedded stack ...")
    stack = BenchStack(pull_wait_seconds=pull_wait, moto_speedup=moto_speedup)
    results: dict[str, dict[str, Any]] = {}
    patches = [p.strip() for p in patch.split(",") if p.strip()]
    try:
        experiments.apply(patches, stack)
        scenarios.warm_up(stack, push=any(sc.push for sc in todo), streaming=any(sc.streaming for sc in todo))
        console.print(f"stack up and warm in {time.perf_counter() - started:.1f} s")
        columns = (TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            for sc in todo:
                task = progress.add_task(f"{sc.key}: {sc.system} {sc.title}", total=sc.messages)
                t0 = time.perf_counter()
                results[sc.key] = scenarios.run(stack, sc, settings, progress_of(progress, task))
                results[sc.key]["wall_s"] = round(time.perf_counter() - t0, 1)
            seek_result = seek.run_in(progress, stack, seek.count(wanted, quick, seek_messages))
    finally:
        stack.stop()
    for r in results.values():
        base = results.get(r["compare_to"])
        if base and base["throughput_msgs_s"]:
            r["ratio_vs_baseline"] = round(r["throughput_msgs_s"] / base["throughput_msgs_s"], 3)

    doc: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": quick,
        "duration_s": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "settings": {"publishers": publishers, "consumers_per_subscription": consumers,
                     "flow_control_window": window, "pull_wait_s": pull_wait, "scale": scale,
                     "moto_speedup": moto_speedup, "patches": patches,
                     "probe_requests": settings.probe_requests, "probe_load": settings.probe_load,
                     "lambda_memory_gb": pricing.LAMBDA_MEMORY_GB},
        "prices": {"as_of": pricing.PRICES_AS_OF, "region": pricing.REGION, "source": pricing.SOURCE,
                   "table": pricing.price_table(),
                   "google": {"message_id_bytes": pricing.GOOGLE_MESSAGE_ID_BYTES,
                              "timestamp_bytes": pricing.GOOGLE_TIMESTAMP_BYTES,
                              "min_bytes_per_request": pricing.GOOGLE_MIN_REQUEST_BYTES}},
        "results": results,
        "seek": seek_result,
    }
    doc["keys_vs_a"] = report.keys_deltas(results)
    doc["crossover"] = crossover.summary(results)
    doc["targets"] = report.targets(results)
    run_measurements(console, doc, quick=quick, validation=validation, external_seconds=external_seconds,
                     out_dir=out.parent)
    if grpc:
        run_grpc(console, doc, settings, quick=quick, scale=scale)
    if versus_runs > 0 and not quick:  # a few minutes: not in CI's --quick
        run_versus(console, doc, versus_runs)
    if durable and not quick:  # the durable local state: journal on against off, restart, disk (a few minutes)
        run_durable_state(console, doc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    chart.draw(doc, chart_path)
    report.print_all(console, doc, detail=detail)
    seek.print_result(console, seek_result)
    console.print(f"wrote {out} and {chart_path} in {doc['duration_s']} s")

    exit_on_failures(console, doc, seek_result, check)


def exit_on_failures(console: Console, doc: dict[str, Any], seek_result: dict[str, Any], check: bool) -> None:
    """Exit 1 when a scenario did not complete, or (with --check) when a target was missed."""
    results = doc["results"]
    failed = [r["key"] for r in results.values() if not r["complete"]]
    if failed:
        console.print(f"[red]incomplete: {', '.join(failed)}[/red]")
        for key in failed:
            for err in results[key]["errors"][:5]:
                console.print(f"  {key}: {err}")
        raise typer.Exit(1)
    if check and not (all(t["met"] for t in doc["targets"]) and seek_result.get("met", True)):
        raise typer.Exit(1)


def run_grpc(console: Console, doc: dict[str, Any], settings: scenarios.Settings, *, quick: bool,
             scale: float) -> None:
    """The gRPC edge's figures (bench/grpc_bench.py) into ``doc["grpc"]``, with A against A-stream beside the
    same driver on Google's emulator (its processes' logs under bench/out/grpc-logs/)."""
    console.print("gRPC edge: the HTTP/2 preface check, memory per StreamingPull stream, Google's emulator ...")
    doc["grpc"] = grpc_bench.measure(OUT / "grpc-logs", quick, settings.publishers, settings.consumers,
                                     settings.window, settings.timeout, int((300 if quick else 10_000) * scale))
    doc["grpc"]["delivery"] = grpc_bench.delivery_summary(doc["results"], doc["grpc"])
    for line in grpc_bench.lines(doc["grpc"], doc["grpc"]["delivery"]):
        console.print(line)


def run_versus(console: Console, doc: dict[str, Any], runs: int) -> None:
    """Metro against Google's emulator, same REST driver (bench/versus.py), into ``doc["versus"]``."""
    console.print(f"versus: Metro and Google's emulator, {runs} alternating runs each, same REST driver ...")
    try:
        doc["versus"] = versus.measure(OUT / "versus-logs", False, runs, say=lambda line: None)
    except Exception as exc:  # a side that did not start or answer: reported, the rest of the run is kept
        doc["versus"] = {"error": repr(exc)}
        console.print(f"[red]versus failed: {exc!r}[/red] (logs under {OUT / 'versus-logs'})")
        return
    versus.print_doc(console, doc["versus"])


def run_durable_state(console: Console, doc: dict[str, Any]) -> None:
    """What METRO_DATA_DIR costs and gives (bench/durable_state.py), into ``doc["durable_state"]``."""
    console.print("durable local state: publish with the journal on and off, restart time, disk ...")
    try:
        doc["durable_state"] = durable_state.measure(OUT / "durable-logs", quick=False)
    except Exception as exc:  # a stack that did not start: reported, the rest of the run is kept
        doc["durable_state"] = {"error": repr(exc)}
        console.print(f"[red]durable state failed: {exc!r}[/red] (logs under {OUT / 'durable-logs'})")
        return
    for line in durable_state.lines(doc["durable_state"]):
        console.print(line)


def run_measurements(console: Console, doc: dict[str, Any], *, quick: bool, validation: bool,
                     external_seconds: float, out_dir: Path) -> None:
    """The measurements beside the scenarios: schema validation per core and the external emulator's rate."""
    if validation:
        console.print("schema validation per core (1 KiB messages) ...")
        doc["validation"] = schema_bench.measure(seconds=0.3 if quick else 2.0)
        doc["targets"].append(schema_bench.target(doc["validation"]))
    if external_seconds != 0:
        run_external(console, doc, external_seconds if external_seconds > 0 else (10 if quick else 20), out_dir)


if __name__ == "__main__":
    cli()
