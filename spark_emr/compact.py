"""Compaction: raw publish objects older than --min-age-seconds -> Parquet archive per topic hour.

    spark-submit --master local[2] spark_emr/compact.py --bucket B --messages-table T [--min-age-seconds 3600]

Steps (see docs/pipeline.md for the commit protocol):

1. driver: list raw/ and archive/ (per topic, on threads), read the manifests of the hours that have
   raw objects (or leftovers), plan each hour: new raw keys, covered raw keys, digest, generation;
2. small hours (input <= --direct-bytes, 256 MiB by default), packed about two units per core: one
   task per unit fetches each hour's raw objects (and old parquet files) with boto3 on threads,
   decodes them into Arrow, merges, cuts deterministic part files and PUTs them: no shuffle;
3. big hours: fetch tasks over key groups ship one Arrow IPC blob per hour, ``groupByKey`` brings
   each hour to one writer task (hours assigned round-robin);
4. writer tasks: merge, sort by (publish time, message id), drop repeats, cut parts, PUT them;
5. driver: PUT each hour's ``_manifest.json`` (the commit), then delete the covered raw objects and
   the files the manifest does not name (old generations, leftovers of interrupted runs).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_emr import common

common.ensure_importable()

from chalicelib.core import archive_layout as layout  # noqa: E402
from spark_emr import plan as planning  # noqa: E402
from spark_emr import tasks  # noqa: E402

DEFAULT_PART_BYTES = 128 * 1024 * 1024
DEFAULT_PART_ROWS = 1_000_000
DEFAULT_DIRECT_BYTES = 256 * 1024 * 1024


def list_selection(s3c: Any, bucket: str, prefixes: list[str], threads: int) -> list[tuple[str, int]]:
    """All (key, size) under ``prefixes``; broad prefixes are split per topic and listed on threads."""
    topic_prefixes: list[str] = []
    for prefix in prefixes:
        depth = prefix.count("/")
        if depth >= 3:  # raw/p/t/ : already a topic
            topic_prefixes.append(prefix)
            continue
        level = [prefix]
        while level and level[0].count("/") < 3:
            level = [q for p in level for q in common.list_prefixes(s3c, bucket, p)]
        topic_prefixes.extend(level)
    found = common.threaded_map(lambda p: list(common.list_objects(s3c, bucket, p)), topic_prefixes, threads)
    return [(o["Key"], int(o["Size"])) for objs in found for o in objs]


def compact(
    spark: Any,
    bucket: str,
    min_age_seconds: int = 3600,
    project: str = "",
    topics: list[str] | None = None,
    part_bytes: int = DEFAULT_PART_BYTES,
    part_rows: int = DEFAULT_PART_ROWS,
    threads: int = 16,
    now: float | None = None,
    stop_after: str = "",
    direct_bytes: int = DEFAULT_DIRECT_BYTES,
) -> dict[str, Any]:
    """Run one compaction; return a report. ``stop_after`` ("write" or "commit") simulates a crash."""
    topics = topics or []
    cfg = common.AwsConfig.from_env(threads)
    s3c = common.s3(cfg)
    t0 = time.monotonic()
    now_ms = int((now if now is not None else time.time()) * 1000)

    raw = list_selection(s3c, bucket, common.raw_prefixes(project, topics), threads)
    arch = list_selection(s3c, bucket, common.archive_prefixes(project, topics), threads)
    hours = planning.group_listing(raw, arch)
    wanted = [(h.topic, h.hour) for h in hours.values() if planning.needs_manifest(h)]
    manifests = tasks.read_manifests(bucket, cfg, wanted)
    plans = planning.plan_compaction(hours, manifests, now_ms, min_age_seconds * 1000)
    work = [p for p in plans if p.work]
    t_plan = time.monotonic()
    common.progress("compact", f"planned {len(work)} topic hours, {sum(len(p.new_raw) for p in work):,} new raw "
                               f"objects, {sum(len(p.covered_raw) for p in plans):,} already covered")

    report: dict[str, Any] = {
        "job": "compact",
        "bucket": bucket,
        "hours": len(work),
        "raw_objects_in": sum(len(p.new_raw) for p in work),
        "raw_bytes_in": sum(hours[planning.hour_id(p.topic, p.hour)].raw[k] for p in work for k in p.new_raw),
        "merged_generations": sum(1 for p in work if p.old is not None),
    }
    infos = _write_parts(spark, bucket, cfg, work, hours, part_bytes, part_rows, direct_bytes, report) if work else {}
    t_write = time.monotonic()
    report["messages"] = sum(f.rows for fs in infos.values() for f in fs)
    report["parquet_files_out"] = sum(len(fs) for fs in infos.values())
    report["parquet_bytes_out"] = sum(f.size for fs in infos.values() for f in fs)
    if work:
        common.progress("compact", f"wrote {report['parquet_files_out']} parquet files ({report['messages']:,} "
                                   "messages); committing manifests")
    if stop_after == "write":
        report["stopped_after"] = "write"
        return report

    # commit: one manifest per hour, written after all its parts exist
    committed = _commit_manifests(s3c, bucket, work, infos, now_ms, threads)
    report["manifests_out"] = len(committed)
    t_commit = time.monotonic()
    if committed:
        common.progress("compact", f"committed {len(committed)} manifests; deleting covered raw objects")
    if stop_after == "commit":
        report["stopped_after"] = "commit"
        return report

    # cleanup: only what a committed manifest covers or no longer names
    _clean_up(s3c, bucket, plans, committed, threads, report)
    t_end = time.monotonic()
    common.progress("compact", f"done: deleted {report['raw_objects_deleted']:,} raw objects, "
                               f"{report['stale_archive_objects_deleted']} superseded archive objects")
    report["seconds"] = {
        "plan": round(t_plan - t0, 3),
        "spark": round(t_write - t_plan, 3),
        "commit": round(t_commit - t_write, 3),
        "cleanup": round(t_end - t_commit, 3),
        "total": round(t_end - t0, 3),
    }
    return report


def _write_parts(spark: Any, bucket: str, cfg: common.AwsConfig, work: list[planning.HourPlan],
                 hours: dict[planning.HourId, planning.HourListing], part_bytes: int, part_rows: int,
                 direct_bytes: int, report: dict[str, Any]) -> dict[planning.HourId, list[layout.ManifestFile]]:
    """The Spark part: write every planned hour's part files; returns the files written per hour."""
    infos: dict[planning.HourId, list[layout.ManifestFile]] = {}
    sc = spark.sparkContext
    par = max(1, sc.defaultParallelism)
    digests = {planning.hour_id(p.topic, p.hour): p.digest for p in work}
    sizes = {
        planning.hour_id(p.topic, p.hour): planning.hour_input_bytes(p, hours[planning.hour_id(p.topic, p.hour)])
        for p in work
    }
    units, big = planning.split_direct(work, sizes, direct_bytes, par)
    timers = {name: sc.accumulator(0.0) for name in ("get", "decode", "merge", "parquet", "put")}
    outputs = []
    if units:  # small hours: fetch + merge + write in one task each, no shuffle
        unit_keys = [[(planning.hour_id(p.topic, p.hour), p.new_raw + p.old_files) for p in u] for u in units]
        direct = tasks.direct_fn(bucket, cfg, digests, part_bytes, part_rows, timers)
        outputs.append(sc.parallelize(unit_keys, len(unit_keys)).flatMap(direct))
    groups: list[list[str]] = []
    n_out = 0
    if big:  # big hours: reads spread over many tasks, then each hour shuffled to one writer
        total_keys = sum(len(p.new_raw) for p in big)
        groups = planning.task_groups(big, common.group_size(total_keys, par))
        n_out = min(len(big), par * 2)
        slot = planning.hour_slots([planning.hour_id(p.topic, p.hour) for p in big], n_out)
        tables = sc.parallelize(groups, len(groups)).flatMap(tasks.fetch_tables_fn(bucket, cfg, timers))
        by_hour = tables.groupByKey(n_out, partitionFunc=lambda hid: slot[hid])
        outputs.append(
            by_hour.mapPartitions(tasks.write_hours_fn(bucket, cfg, digests, part_bytes, part_rows, timers))
        )
    files = (outputs[0] if len(outputs) == 1 else sc.union(outputs)).collect()
    report["task_seconds"] = {name: round(acc.value, 3) for name, acc in timers.items()}
    report["direct_tasks"], report["direct_hours"] = len(units), sum(len(u) for u in units)
    report["shuffle_fetch_tasks"], report["shuffle_hours"], report["write_partitions"] = (
        len(groups),
        len(big),
        n_out,
    )
    for topic, hour, key, nrows, data_bytes, size, first_id, last_id in files:
        infos.setdefault((topic, hour), []).append(
            layout.ManifestFile(key, nrows, data_bytes, size, first_id, last_id)
        )
    return infos


def _commit_manifests(s3c: Any, bucket: str, work: list[planning.HourPlan],
                      infos: dict[planning.HourId, list[layout.ManifestFile]], now_ms: int,
                      threads: int) -> dict[planning.HourId, layout.Manifest]:
    """PUT one manifest per hour, after all its parts exist (the commit); returns them by hour."""
    created = layout.format_time(datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc))
    committed: dict[planning.HourId, layout.Manifest] = {}
    for p in work:
        hid = planning.hour_id(p.topic, p.hour)
        committed[hid] = planning.build_manifest(p, infos.get(hid, []), created)

    def put_manifest(m: layout.Manifest) -> None:
        s3c.put_object(
            Bucket=bucket,
            Key=layout.manifest_key(m.topic, m.hour),
            Body=layout.serialize_manifest(m),
            ContentType="application/json",
        )

    common.threaded_map(put_manifest, list(committed.values()), threads)
    return committed


def _clean_up(s3c: Any, bucket: str, plans: list[planning.HourPlan],
              committed: dict[planning.HourId, layout.Manifest], threads: int, report: dict[str, Any]) -> None:
    """Delete only what a committed manifest covers or no longer names."""
    raw_delete: list[str] = []
    stale_delete: list[str] = []
    for p in plans:
        hid = planning.hour_id(p.topic, p.hour)
        current = committed.get(hid, p.old)
        if current is None:
            continue
        raw_delete.extend(p.covered_raw)
        if hid in committed:
            raw_delete.extend(p.new_raw)
        stale_delete.extend(planning.stale_keys(p, current))
    report["raw_objects_deleted"] = sum(
        common.threaded_map(lambda ks: common.delete_keys(s3c, bucket, ks), common.chunks(raw_delete, 1000), threads)
    )
    report["stale_archive_objects_deleted"] = common.delete_keys(s3c, bucket, stale_delete)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = common.base_parser("Compact raw publish objects into the Parquet archive.")
    p.add_argument("--min-age-seconds", type=int, default=3600, help="only raw objects published this long ago")
    p.add_argument("--part-bytes", type=int, default=DEFAULT_PART_BYTES, help="target body bytes per part file")
    p.add_argument("--part-rows", type=int, default=DEFAULT_PART_ROWS, help="max rows per part file")
    p.add_argument(
        "--direct-bytes",
        type=int,
        default=DEFAULT_DIRECT_BYTES,
        help="hours reading at most this many bytes are compacted by one task without a shuffle",
    )
    args = p.parse_args(argv)
    spark = common.get_spark("metro-compact", args.master)
    report = compact(
        spark,
        args.bucket,
        min_age_seconds=args.min_age_seconds,
        project=args.project,
        topics=args.topic,
        part_bytes=args.part_bytes,
        part_rows=args.part_rows,
        threads=args.threads,
        direct_bytes=args.direct_bytes,
    )
    print(json.dumps(report, indent=None if args.json else 2, default=str))
    return report


if __name__ == "__main__":
    main()
