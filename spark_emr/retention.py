"""Retention: delete archive hours and raw objects older than each topic's retention.

    spark-submit --master local[2] spark_emr/retention.py --bucket B --messages-table T --resources-table R \
        --retention-seconds 604800 [--topic-retention projects/p/topics/t=86400] [--retention-file r.json] [--dry-run]

An hour goes once its end is older than the topic's retention: per-topic override, else per-project
``projects/p`` override, else what the resources table says (``--resources-table``: the topic's own
messageRetentionDuration and its subscriptions'), else the default; never less than the table's
settings need, so a short override cannot delete bodies that an unacked message may still point to.
The run holds the archive maintenance lock (spark_emr/lock.py), like compaction.

Per hour, in a task: read the manifest (messages come from it), count the messages of raw objects it
does not cover (header range GETs), then delete the raw objects, then the manifest (readers stop seeing
the hour), then the remaining archive files. An interrupted run leaves only objects of an expired hour,
which the next run deletes.
The DynamoDB messages table expires its items on its own (``ttl``), so it is not touched.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_emr import common

common.ensure_importable()

from chalicelib.core.replay import archive_layout as layout  # noqa: E402
from chalicelib.store import archive as store  # noqa: E402
from spark_emr import lock, tasks  # noqa: E402
from spark_emr import plan as planning  # noqa: E402
from spark_emr.listing import list_selection  # noqa: E402
from spark_emr.settings import read_settings  # noqa: E402

Unit = tuple[str, int, list[tuple[str, int]], list[tuple[str, int]]]  # topic, hour ms, raw, archive


def expire_fn(bucket: str, cfg: common.AwsConfig, dry_run: bool) -> Any:
    def run(unit: Unit) -> dict[str, Any]:
        topic, hour_ms, raw, arch = unit
        s3c = common.s3(cfg)
        hour = layout.hour_of_ms(hour_ms)
        manifest = store.read_manifest(s3c, bucket, topic, hour) if arch else None
        covered = set(manifest.raw_keys) if manifest else set()
        messages = manifest.rows if manifest else 0
        uncovered = [k for k, _ in raw if k not in covered]
        counts = common.threaded_map(lambda k: tasks.header_counts(bucket, cfg, k), uncovered, cfg.threads)
        messages += sum(n for n, _ in counts)
        if not dry_run:
            common.delete_keys(s3c, bucket, [k for k, _ in raw])
            mkey = layout.manifest_key(topic, hour)
            arch_keys = [k for k, _ in arch]
            if mkey in arch_keys:
                common.delete_keys(s3c, bucket, [mkey])
            common.delete_keys(s3c, bucket, [k for k in arch_keys if k != mkey])
        return {
            "topic": topic,
            "hour": layout.format_hour(hour),
            "raw_objects": len(raw),
            "archive_objects": len(arch),
            "objects": len(raw) + len(arch),
            "bytes": sum(s for _, s in raw) + sum(s for _, s in arch),
            "messages": messages,
        }

    return run


def retention(
    spark: Any,
    bucket: str,
    retention_seconds: int,
    overrides: dict[str, int] | None = None,
    project: str = "",
    topics: list[str] | None = None,
    threads: int = 16,
    now: float | None = None,
    dry_run: bool = False,
    resources_table: str = "",
    lease_seconds: int = lock.DEFAULT_LEASE_SECONDS,
) -> dict[str, Any]:
    """Delete expired hours under the archive maintenance lock; return a report (totals, per topic, per hour).

    With ``resources_table`` each topic's retention is at least what its own and its subscriptions'
    messageRetentionDuration need (see :func:`plan.retention_for`).
    """
    clock: lock.Clock = (lambda: now) if now is not None else time.time
    cfg = common.AwsConfig.from_env(threads)
    settings = (
        read_settings(common.client("dynamodb", cfg), resources_table) if resources_table else planning.NO_SETTINGS
    )
    lease = lock.acquire(common.s3(cfg), bucket, "retention", clock, lease_seconds)
    try:
        return expire(spark, bucket, cfg, lease, retention_seconds, overrides or {}, settings,
                      project, topics or [], dry_run)
    finally:
        lease.release()


def expire(
    spark: Any,
    bucket: str,
    cfg: common.AwsConfig,
    lease: lock.Lease,
    retention_seconds: int,
    overrides: dict[str, int],
    settings: planning.RetentionSettings,
    project: str,
    topics: list[str],
    dry_run: bool,
) -> dict[str, Any]:
    s3c = common.s3(cfg)
    t0 = time.monotonic()
    now_ms = int(lease.clock() * 1000)
    raw = list_selection(s3c, bucket, common.raw_prefixes(project, topics), cfg.threads)
    arch = list_selection(s3c, bucket, common.archive_prefixes(project, topics), cfg.threads)
    hours = planning.group_listing(raw, arch)
    expired = planning.expired_hours(hours, now_ms, retention_seconds, overrides, settings)
    units: list[Unit] = [
        (h.topic, layout.hour_ms(h.hour), sorted(h.raw.items()), sorted(h.archive.items())) for h in expired
    ]
    rows: list[dict[str, Any]] = []
    common.progress("retention", f"{len(units)} expired topic hours{' (dry run)' if dry_run else ''}")
    if units:
        lease.renew()  # LockLost here: another run owns the archive now, delete nothing
        sc = spark.sparkContext
        slices = min(len(units), max(1, sc.defaultParallelism) * 3)
        rows = sc.parallelize(units, slices).map(expire_fn(bucket, cfg, dry_run)).collect()
    per_topic: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        for k in ("objects", "raw_objects", "archive_objects", "bytes", "messages"):
            per_topic[r["topic"]][k] += r[k]
        per_topic[r["topic"]]["hours"] += 1
        per_topic[r["topic"]]["retention_seconds"] = planning.retention_for(
            r["topic"], retention_seconds, overrides, settings
        )
    totals = planning.summarize(rows, ("objects", "raw_objects", "archive_objects", "bytes", "messages"))
    return {
        "job": "retention",
        "bucket": bucket,
        "dry_run": dry_run,
        "settings_from_table": settings.known,
        "hours": len(rows),
        **{k: totals.get(k, 0) for k in ("objects", "raw_objects", "archive_objects", "bytes", "messages")},
        "topics": {t: dict(v) for t, v in sorted(per_topic.items())},
        "removed": sorted(rows, key=lambda r: (r["topic"], r["hour"])),
        "seconds": round(time.monotonic() - t0, 3),
    }


def parse_overrides(pairs: list[str], path: str = "") -> dict[str, int]:
    """``projects/p/topics/t=SECONDS`` (or ``projects/p=SECONDS``) pairs plus an optional JSON file of the same."""
    out: dict[str, int] = {}
    if path:
        with open(path) as fh:
            out.update({str(k): int(v) for k, v in json.load(fh).items()})
    for pair in pairs:
        name, _, seconds = pair.rpartition("=")
        if not name:
            raise SystemExit(f"--topic-retention wants NAME=SECONDS, got {pair!r}")
        out[name] = int(seconds)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = common.base_parser("Delete archive hours and raw objects past their topic's retention.")
    p.add_argument("--retention-seconds", type=int, default=7 * 86400, help="default retention (7 days)")
    p.add_argument("--topic-retention", action="append", default=[], help="NAME=SECONDS, NAME a topic or projects/p")
    p.add_argument("--retention-file", default="", help='JSON {"projects/p/topics/t": seconds, ...}')
    p.add_argument("--dry-run", action="store_true", help="report what would go, delete nothing")
    p.add_argument(
        "--resources-table",
        default="",
        help="the resources table: retention never goes below what each topic's and its subscriptions' "
        "messageRetentionDuration need (without it the command line decides alone)",
    )
    common.add_lock_arguments(p)
    args = p.parse_args(argv)
    if not args.resources_table:
        common.progress("retention", "no --resources-table: the command line alone decides what expires")
    spark = common.get_spark("metro-retention", args.master)
    report = common.run_or_report_lock(
        "retention",
        lambda: retention(
            spark,
            args.bucket,
            args.retention_seconds,
            parse_overrides(args.topic_retention, args.retention_file),
            project=args.project,
            topics=args.topic,
            threads=args.threads,
            dry_run=args.dry_run,
            resources_table=args.resources_table,
            lease_seconds=args.lease_seconds,
        ),
    )
    if not args.json:
        report = {k: v for k, v in report.items() if k != "removed"}
    print(json.dumps(report, indent=None if args.json else 2))
    return report


if __name__ == "__main__":
    main()
