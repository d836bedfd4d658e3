"""Benchmark of compaction on local[2] against a moto server started here.

    .venv/bin/python -m spark_emr.bench [--messages 100000] [--batch 100] [--size 1024] [--master local[2]]

Generates ``messages`` messages (requests of ``batch``, ``size`` bytes each) as raw objects, starts
Spark (timed apart: JVM + session + first Python worker), runs one compaction, checks that the
archive holds every message once, and writes ``bench/out/spark_results.json`` (untracked); ``--record``
writes the tracked ``bench/spark_results.json`` instead.
"""

from __future__ import annotations

import json
import os
import platform
import random
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from chalicelib.local.moto_speedups import speed_up_moto
from spark_emr import common

app = typer.Typer(add_completion=False, help=__doc__)
console = Console()
ROOT = common.PROJECT_ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[Any, str]:
    from moto.server import ThreadedMotoServer

    speed_up_moto()

    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }.items():
        os.environ.setdefault(k, v)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    return server, endpoint


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system, including reaped children) of a process and all its descendants:
    here the driver with the in-process moto server, the JVM and the Python workers. Linux only."""
    root = root or os.getpid()
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                raw = fh.read()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        ppid = int(fields[1])
        cpu = sum(int(x) for x in fields[11:15]) / tick  # utime, stime, cutime, cstime
        stats[int(entry)] = (ppid, cpu)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(p for p, (pp, _) in stats.items() if pp == pid)
    return total


def generate(s3c: Any, bucket: str, topic: str, messages: int, batch: int, size: int, hours: int, threads: int) -> int:
    """Write the raw objects (publish times spread over ``hours`` full hours that ended before now)."""
    from chalicelib.core import payload
    from chalicelib.core.replay import archive_layout as layout

    requests = -(-messages // batch)
    now_ms = int(time.time() * 1000)
    first_hour = layout.hour_start_ms(now_ms) - (hours + 1) * layout.HOUR_MS
    span = hours * layout.HOUR_MS
    rng = random.Random(42)
    blob_pool = [rng.randbytes(size) for _ in range(64)]

    def one(i: int) -> int:
        ms = first_hour + (i * span) // requests
        rid = f"{ms:013d}{i % 1_000_000:06d}"
        n = min(batch, messages - i * batch)
        msgs = [
            payload.StoredMessage(f"{rid}{j:03d}", blob_pool[(i + j) % len(blob_pool)], {"seq": str(i * batch + j)})
            for j in range(n)
        ]
        pt = layout.format_time(datetime.fromtimestamp(ms / 1000, tz=timezone.utc))
        body, _ = payload.encode(topic, rid, pt, msgs)
        s3c.put_object(Bucket=bucket, Key=payload.raw_key(topic, rid, pt), Body=body)
        return n

    with Progress(
        TextColumn("[bold]publishing raw objects"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("put", total=requests)
        chunk = 200
        for start in range(0, requests, chunk):
            common.threaded_map(one, range(start, min(requests, start + chunk)), threads)
            progress.update(task, advance=min(chunk, requests - start))
    return requests


def count_objects(s3c: Any, bucket: str, prefix: str = "") -> tuple[int, int]:
    n = size = 0
    for o in common.list_objects(s3c, bucket, prefix):
        n += 1
        size += int(o["Size"])
    return n, size


def verify(s3c: Any, bucket: str, topic: str, expected: int) -> int:
    from chalicelib.core.replay import archive_layout as layout

    total = 0
    for o in common.list_objects(s3c, bucket, layout.archive_topic_prefix(topic)):
        if o["Key"].endswith(layout.MANIFEST_NAME):
            m = layout.parse_manifest(s3c.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
            total += m.rows
    if total != expected:
        raise RuntimeError(f"archive holds {total} messages, expected {expected}")
    return total


@app.command()
def main(
    messages: int = typer.Option(100_000, help="messages to publish"),
    batch: int = typer.Option(100, help="messages per publish request (raw object)"),
    size: int = typer.Option(1024, help="body bytes per message"),
    hours: int = typer.Option(1, help="hours the publish times spread over"),
    master: str = typer.Option("local[2]", help="Spark master"),
    threads: int = typer.Option(16, help="S3 threads per task"),
    direct_bytes: int = typer.Option(256 * 1024 * 1024, help="compact.py --direct-bytes (0: always shuffle)"),
    output: Path = typer.Option(ROOT / "bench" / "out" / "spark_results.json", help="results file (untracked)"),
    record: bool = typer.Option(False, "--record", help="write the tracked bench/spark_results.json instead"),
) -> None:
    if record:
        output = ROOT / "bench" / "spark_results.json"
    server, _endpoint = start_moto()
    try:
        s3c = common.s3(common.AwsConfig.from_env(threads))
        bucket = "metro-bench"
        topic = "projects/bench/topics/load"
        s3c.create_bucket(Bucket=bucket)
        t = time.monotonic()
        requests = generate(s3c, bucket, topic, messages, batch, size, hours, threads)
        gen_s = time.monotonic() - t
        objects_in, bytes_in = count_objects(s3c, bucket)

        with console.status("starting Spark (JVM, session, Python workers)"):
            t = time.monotonic()
            spark = common.get_spark("metro-bench", master)
            sc = spark.sparkContext
            sc.parallelize(range(sc.defaultParallelism * 2), sc.defaultParallelism * 2).map(lambda x: x).count()
            startup_s = time.monotonic() - t

        from spark_emr import compact

        with console.status(f"compacting {messages:,} messages in {objects_in:,} raw objects"):
            cpu0 = tree_cpu_seconds()
            t = time.monotonic()
            report = compact.compact(spark, bucket, min_age_seconds=60, threads=threads, direct_bytes=direct_bytes)
            compact_s = time.monotonic() - t
            compact_cpu = tree_cpu_seconds() - cpu0
        objects_out, bytes_out = count_objects(s3c, bucket)
        archived = verify(s3c, bucket, topic, messages)
        spark.stop()
    finally:
        server.stop()

    rate = messages / compact_s if compact_s else 0.0
    results = {
        "messages": messages,
        "batch": batch,
        "message_bytes": size,
        "master": master,
        "threads_per_task": threads,
        "direct_bytes": direct_bytes,
        "path": "direct (one task per hour, no shuffle)" if report.get("direct_hours") else "fetch -> shuffle -> write",
        "raw_objects_in": objects_in,
        "raw_bytes_in": bytes_in,
        "objects_out": objects_out,
        "bytes_out": bytes_out,
        "object_reduction": round(objects_in / max(1, objects_out), 1),
        "archived_messages": archived,
        "generate_seconds": round(gen_s, 3),
        "startup_seconds": round(startup_s, 3),
        "compaction_seconds": round(compact_s, 3),
        "messages_per_second_after_startup": round(rate, 1),
        "target_messages_per_second": 20_000,
        # load-independent view: CPU seconds the compaction cost (Spark driver + JVM + Python workers
        # + the moto server, which runs in this process), and the rate if those seconds were spread
        # over all cores with nothing else running
        "compaction_cpu_seconds": round(compact_cpu, 3),
        "cpu_bound_messages_per_second_estimate": round(messages / (compact_cpu / (os.cpu_count() or 1)), 1)
        if compact_cpu
        else None,
        "compaction_phases": report.get("seconds", {}),
        "task_seconds": report.get("task_seconds", {}),
        "fetch_tasks": report.get("fetch_tasks"),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "endpoint": "moto server (local)",
        "requests": requests,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")

    table = Table(title="Spark compaction benchmark")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k in (
        "messages",
        "raw_objects_in",
        "objects_out",
        "object_reduction",
        "startup_seconds",
        "compaction_seconds",
        "messages_per_second_after_startup",
        "compaction_cpu_seconds",
        "cpu_bound_messages_per_second_estimate",
        "load_average_1m",
    ):
        table.add_row(k, f"{results[k]:,}" if isinstance(results[k], int) else str(results[k]))
    console.print(table)
    console.print(f"phases: {results['compaction_phases']}  -> {output}")


if __name__ == "__main__":
    app()
