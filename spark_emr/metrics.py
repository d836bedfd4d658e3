"""Usage metrics: messages and bytes published per project, topic and day.

    spark-submit --master local[2] spark_emr/metrics.py --bucket B --messages-table T

Sources, per topic hour (a task each): the hour's manifest (its row and body-byte counts, no parquet
read) plus the headers of the raw objects it does not cover (one range GET each). The hourly rows
become a DataFrame; :func:`spark_emr.transforms.daily_usage` sums them per day. Outputs:

* ``metrics/daily/{project}/{YYYY}/{MM}/{DD}.parquet``: one row per topic of that day;
* ``metrics/summary/{project}.json``: ARGO Messaging Service style ``{"metrics": [...]}``.

Only what is still stored counts (retention removes the past). Delivered / acknowledged counts per
subscription are not derivable from S3 and are left out.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from datetime import date, datetime
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_emr import common

common.ensure_importable()

from chalicelib.core.replay import archive_layout as layout  # noqa: E402
from chalicelib.store import archive as store  # noqa: E402
from spark_emr import plan as planning  # noqa: E402
from spark_emr import reports, tasks, transforms  # noqa: E402
from spark_emr.listing import list_selection  # noqa: E402

Unit = tuple[str, int, list[str], bool]  # topic, hour ms, raw keys, has manifest


def hour_usage_fn(bucket: str, cfg: common.AwsConfig) -> Any:
    def run(unit: Unit) -> tuple[str, str, datetime, int, int]:
        topic, hour_ms, raw, has_manifest = unit
        hour = layout.hour_of_ms(hour_ms)
        manifest = store.read_manifest(common.s3(cfg), bucket, topic, hour) if has_manifest else None
        covered = set(manifest.raw_keys) if manifest else set()
        messages = manifest.rows if manifest else 0
        size = manifest.data_bytes if manifest else 0
        uncovered = [k for k in raw if k not in covered]
        for n, b in common.threaded_map(lambda k: tasks.header_counts(bucket, cfg, k), uncovered, cfg.threads):
            messages += n
            size += b
        project, _ = layout.split_topic(topic)
        return project, topic, hour, messages, size

    return run


def metrics(
    spark: Any, bucket: str, project: str = "", topics: list[str] | None = None, threads: int = 16
) -> dict[str, Any]:
    cfg = common.AwsConfig.from_env(threads)
    s3c = common.s3(cfg)
    t0 = time.monotonic()
    topics = topics or []
    raw = list_selection(s3c, bucket, common.raw_prefixes(project, topics), threads)
    arch = list_selection(s3c, bucket, common.archive_prefixes(project, topics), threads)
    hours = planning.group_listing(raw, arch)
    units: list[Unit] = [
        (h.topic, layout.hour_ms(h.hour), sorted(h.raw), h.has_manifest)
        for h in hours.values()
        if h.raw or h.has_manifest
    ]
    daily: list[dict[str, Any]] = []
    common.progress("metrics", f"counting {len(units)} topic hours")
    if units:
        sc = spark.sparkContext
        slices = min(len(units), max(1, sc.defaultParallelism) * 3)
        hourly = sc.parallelize(sorted(units), slices).map(hour_usage_fn(bucket, cfg))
        df = spark.createDataFrame(hourly, transforms.usage_rows_schema())
        daily = [r.asDict() for r in transforms.daily_usage(df).collect()]

    by_project: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in daily:
        by_project[r["project"]].append(r)
    written: list[str] = []
    for proj, rows in sorted(by_project.items()):
        by_day: dict[date, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_day[r["day"]].append(r)
        for d, day_rows in sorted(by_day.items()):
            key = reports.daily_key(proj, d)
            body = store.table_to_parquet(reports.daily_table(day_rows))
            s3c.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/vnd.apache.parquet")
            written.append(key)
        key = reports.summary_key(proj)
        s3c.put_object(
            Bucket=bucket,
            Key=key,
            Body=json.dumps(reports.summary(proj, rows), indent=1).encode(),
            ContentType="application/json",
        )
        written.append(key)
    return {
        "job": "metrics",
        "bucket": bucket,
        "hours": len(units),
        "projects": len(by_project),
        "messages": sum(int(r["messages"]) for r in daily),
        "bytes": sum(int(r["bytes"]) for r in daily),
        "daily": [
            {
                "project": r["project"],
                "topic": r["topic"],
                "day": str(r["day"]),
                "messages": r["messages"],
                "bytes": r["bytes"],
            }
            for r in daily
        ],
        "written": written,
        "seconds": round(time.monotonic() - t0, 3),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = common.base_parser("Daily usage metrics per project and topic (Parquet + ARGO-style JSON summary).")
    args = p.parse_args(argv)
    spark = common.get_spark("metro-metrics", args.master)
    report = metrics(spark, args.bucket, project=args.project, topics=args.topic, threads=args.threads)
    print(json.dumps(report, indent=None if args.json else 2))
    return report


if __name__ == "__main__":
    main()
