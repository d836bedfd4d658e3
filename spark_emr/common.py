"""Shared plumbing of the jobs: S3 clients inside tasks, listing, threaded GETs, the Spark session.

No S3 access happens through Hadoop (no s3a on the classpath): the driver lists keys with boto3 and
tasks read and write objects with boto3. The endpoint comes from ``AWS_ENDPOINT_URL`` (unset on EMR,
a moto server in tests), the region from ``AWS_REGION`` / ``AWS_DEFAULT_REGION``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class AwsConfig:
    """Where tasks send their AWS calls; captured on the driver and shipped inside task closures."""

    endpoint_url: str | None = None
    region: str = "us-east-1"
    threads: int = 16
    messages_table: str = ""  # where the bytes of inline-logged publish requests are (spark_emr/log_items.py)

    @classmethod
    def from_env(cls, threads: int = 16, messages_table: str = "") -> AwsConfig:
        return cls(
            endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
            region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            threads=threads,
            messages_table=messages_table,
        )


_clients: dict[tuple[str, str | None, str, int], Any] = {}
_clients_lock = threading.Lock()


def client(service: str, cfg: AwsConfig | None = None) -> Any:
    """A boto3 client, cached per process (Python workers are reused between tasks)."""
    cfg = cfg or AwsConfig.from_env()
    endpoint = cfg.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
    key = (service, endpoint, cfg.region, cfg.threads)
    with _clients_lock:
        found = _clients.get(key)
        if found is None:
            import boto3
            from botocore.config import Config

            conf = Config(
                max_pool_connections=max(10, cfg.threads * 2),
                retries={"max_attempts": 8, "mode": "adaptive"},
                s3={"addressing_style": "path"} if endpoint else {},
            )
            session = boto3.session.Session()
            found = session.client(service, region_name=cfg.region, endpoint_url=endpoint, config=conf)  # type: ignore[call-overload]
            _clients[key] = found
        return found


def s3(cfg: AwsConfig | None = None) -> Any:
    return client("s3", cfg)


def list_objects(s3_client: Any, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
    """Every object under ``prefix`` as ``{"Key", "Size", "LastModified"}`` dicts (ListObjectsV2 pages)."""
    paginator = s3_client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            yield {"Key": obj["Key"], "Size": obj["Size"], "LastModified": obj.get("LastModified")}


def list_prefixes(s3_client: Any, bucket: str, prefix: str) -> list[str]:
    """The "folders" right under ``prefix`` (ListObjectsV2 with a delimiter)."""
    out: list[str] = []
    paginator = s3_client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        out.extend(p["Prefix"] for p in page.get("CommonPrefixes", []))
    return out


def threaded_map(fn: Callable[[T], R], items: Iterable[T], threads: int) -> list[R]:
    """``[fn(x) for x in items]`` on a thread pool (S3 calls release the GIL while waiting)."""
    seq = list(items)
    if threads <= 1 or len(seq) <= 1:
        return [fn(x) for x in seq]
    with ThreadPoolExecutor(max_workers=min(threads, len(seq))) as pool:
        return list(pool.map(fn, seq))


def prefetch_map(fn: Callable[[T], R], items: Iterable[T], threads: int, inflight: int = 0) -> Iterator[R]:
    """``fn`` over ``items`` on a thread pool, yielded in order while later calls are still running:
    the caller's CPU work (decoding) overlaps the I/O. At most ``inflight`` calls (default
    ``4 * threads``) are outstanding, which bounds the memory held by fetched objects."""
    inflight = inflight or max(1, threads * 4)
    it = iter(items)
    if threads <= 1:
        yield from (fn(x) for x in it)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        pending: deque[Future[R]] = deque(pool.submit(fn, x) for x in itertools.islice(it, inflight))
        while pending:
            result = pending.popleft().result()
            nxt = next(it, _END)
            if nxt is not _END:
                pending.append(pool.submit(fn, nxt))  # type: ignore[arg-type]
            yield result


_END = object()


def get_bytes(s3_client: Any, bucket: str, key: str, byte_range: str | None = None) -> bytes | None:
    """The object's bytes, or None when it does not exist (deleted meanwhile)."""
    try:
        if byte_range:
            obj = s3_client.get_object(Bucket=bucket, Key=key, Range=byte_range)
        else:
            obj = s3_client.get_object(Bucket=bucket, Key=key)
    except Exception as exc:
        if is_missing(exc):
            return None
        raise
    data: bytes = obj["Body"].read()
    return data


def is_missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("NoSuchKey", "404", "NotFound")


def delete_keys(s3_client: Any, bucket: str, keys: Iterable[str]) -> int:
    """Delete keys with DeleteObjects (1,000 per call); return how many were asked to be deleted."""
    batch: list[str] = []
    count = 0

    def flush() -> None:
        nonlocal count
        if not batch:
            return
        resp = s3_client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
        errors = resp.get("Errors") or []
        if errors:
            raise RuntimeError(f"DeleteObjects failed for {len(errors)} keys, first: {errors[0]}")
        count += len(batch)
        batch.clear()

    for key in keys:
        batch.append(key)
        if len(batch) == 1000:
            flush()
    flush()
    return count


def chunks(seq: list[T], size: int) -> list[list[T]]:
    size = max(1, size)
    return [seq[i : i + size] for i in range(0, len(seq), size)]


def group_size(total: int, parallelism: int, lo: int = 8, hi: int = 256) -> int:
    """Keys per task: aim at ~3 tasks per core, each neither tiny nor huge."""
    if total <= 0:
        return lo
    want = -(-total // max(1, parallelism * 3))
    return max(lo, min(hi, want))


def progress(job: str, message: str) -> None:
    """One progress line on stderr (stdout carries the job's JSON report)."""
    print(f"{time.strftime('%H:%M:%S')} {job}: {message}", file=sys.stderr, flush=True)


# --- Spark session ----------------------------------------------------------------------------


def ensure_importable() -> None:
    """Let ``spark-submit spark_emr/<job>.py`` import ``spark_emr`` and ``chalicelib`` from the tree."""
    root = str(PROJECT_ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


def is_local(master: str | None) -> bool:
    """Whether the executors run on this machine: a ``local[...]`` master, given or set by spark-submit
    (``spark.master`` reaches the driver as ``--master``; without either Spark defaults to local)."""
    chosen = master or os.environ.get("MASTER") or _submitted_master() or "local"
    return chosen.startswith("local")


def _submitted_master() -> str:
    """The master spark-submit was given: a driver in a YARN container (``--deploy-mode cluster``) is on
    YARN; a client-mode driver finds ``--master`` in PYSPARK_SUBMIT_ARGS."""
    if os.environ.get("CONTAINER_ID") or os.environ.get("SPARK_YARN_STAGING_DIR"):
        return "yarn"
    args = os.environ.get("PYSPARK_SUBMIT_ARGS", "").split()
    return args[args.index("--master") + 1] if "--master" in args[:-1] else ""


def get_spark(app_name: str, master: str | None = None, extra: dict[str, str] | None = None) -> Any:
    """The job's SparkSession (created or reused).

    With a local master the project root goes onto the Python workers' PYTHONPATH (they import
    ``chalicelib`` and ``spark_emr``); on a cluster the code travels with ``--py-files metro-emr.zip``
    and spark-submit sets the executors' PYTHONPATH (nothing here overrides it).
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.ui.enabled": os.environ.get("METRO_SPARK_UI", "false"),
        "spark.sql.shuffle.partitions": os.environ.get("METRO_SHUFFLE_PARTITIONS", "8"),
        "spark.python.worker.reuse": "true",
        # Spark's stage progress bar on stderr (`make compact` and friends turn it on)
        "spark.ui.showConsoleProgress": os.environ.get("METRO_SPARK_PROGRESS", "false"),
    }
    local = is_local(master)
    if local:  # the workers run on this machine: the driver's paths exist there
        pythonpath = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        conf["spark.executorEnv.PYTHONPATH"] = pythonpath
    # else (YARN, EMR): spark-submit ships --py-files and sets the executors' PYTHONPATH itself; the
    # driver's absolute paths would not exist on the other nodes
    for k in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(k):
            conf[f"spark.executorEnv.{k}"] = os.environ[k]
    launched_here = "PYSPARK_GATEWAY_PORT" not in os.environ  # not under spark-submit
    if local and launched_here and not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable  # workers use the driver's interpreter (the venv)
    conf.update(extra or {})
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("METRO_SPARK_LOG_LEVEL", "WARN"))
    return spark


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--bucket", required=True, help="the Metro data bucket (raw/, archive/, metrics/)")
    p.add_argument(
        "--messages-table",
        default="",
        help="the messages table: where small publish requests keep their bytes (no raw object); replay also "
        "enumerates raw objects with one Query per topic when given",
    )
    p.add_argument("--master", default=None, help="Spark master (default: whatever spark-submit says)")
    p.add_argument("--project", default="", help="only this project")
    p.add_argument("--topic", action="append", default=[], help="only these topics (projects/p/topics/t)")
    p.add_argument("--threads", type=int, default=16, help="S3 threads per task")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


LOCK_EXIT_CODE = 75  # EX_TEMPFAIL: another run holds the archive maintenance lock, try again later


def add_lock_arguments(p: argparse.ArgumentParser) -> None:
    from spark_emr import lock

    p.add_argument(
        "--lease-seconds",
        type=int,
        default=lock.DEFAULT_LEASE_SECONDS,
        help="lease of the archive maintenance lock: a crashed holder's lock is taken over after this long",
    )


def run_or_report_lock(job: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``; when the lock is held by another run (or lost to one), print why and exit 75."""
    from spark_emr import lock

    try:
        return run()
    except (lock.LockHeld, lock.LockLost) as exc:
        print(json.dumps({"job": job, "error": type(exc).__name__, "detail": str(exc)}))
        raise SystemExit(LOCK_EXIT_CODE) from exc


def raw_prefixes(project: str, topics: list[str]) -> list[str]:
    """Listing prefixes for the selection (all of raw/ when nothing is selected)."""
    from chalicelib.core.replay import archive_layout as layout

    if topics:
        return [layout.raw_topic_prefix(t) for t in topics]
    if project:
        return [f"{layout.RAW_PREFIX}{project}/"]
    return [layout.RAW_PREFIX]


def archive_prefixes(project: str, topics: list[str]) -> list[str]:
    from chalicelib.core.replay import archive_layout as layout

    if topics:
        return [layout.archive_topic_prefix(t) for t in topics]
    if project:
        return [f"{layout.ARCHIVE_PREFIX}{project}/"]
    return [layout.ARCHIVE_PREFIX]
