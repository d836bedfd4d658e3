"""Compaction: raw publish objects older than --min-age-seconds -> Parquet archive per topic hour.

    spark-submit --master local[2] spark_emr/compact.py --bucket B --messages-table T [--resources-table R]
        [--min-age-seconds 3600]

Small publish requests have no raw object: their bytes are in the messages table's items (keys ending
``.inline``, spark_emr/log_items.py). With ``--messages-table`` the listing adds them, from one Query per
topic (``--resources-table`` adds the topics that have nothing in S3 yet), tasks read them with BatchGetItem,
and they are archived like raw objects; their items stay until their TTL.

Steps (see docs/pipeline.md for the commit protocol):

1. driver: list raw/ and archive/ (per topic, on threads) in rounds of about ``--round-keys`` keys (a
   few topics at a time: the driver never holds the whole night's keys), read the manifests of the
   round's hours that have raw objects (or leftovers), plan each hour: new raw keys, covered raw keys,
   digest, generation; steps 2-5 run per round;
2. small hours (input <= --direct-bytes, 256 MiB by default), packed about two units per core: one
   task per unit fetches each hour's raw objects (and old parquet files) with boto3 on threads,
   decodes them into Arrow, merges, cuts deterministic part files and PUTs them: no shuffle;
3. big hours: fetch tasks over key groups ship Arrow IPC blobs per hour and publish-time slice (an
   hour of N times ``--slice-bytes`` input is cut into N slices), ``groupByKey`` brings each slice to
   one writer task (slices assigned round-robin);
4. writer tasks: merge, sort by (publish time, message id), drop repeats, cut parts, PUT them;
5. driver: PUT each hour's ``_manifest.json`` (the commit), then delete the covered raw objects and
   the files the manifest does not name (old generations, leftovers of interrupted runs).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_emr import common

common.ensure_importable()

from chalicelib.core.replay import archive_layout as layout  # noqa: E402
from chalicelib.store import archive as store  # noqa: E402
from spark_emr import lock, log_items, tasks  # noqa: E402
from spark_emr import plan as planning  # noqa: E402
from spark_emr.listing import Listing, listing_rounds  # noqa: E402

DEFAULT_PART_BYTES = 128 * 1024 * 1024
DEFAULT_PART_ROWS = 1_000_000
DEFAULT_DIRECT_BYTES = 256 * 1024 * 1024
DEFAULT_ROUND_KEYS = 1_000_000
DEFAULT_LOG_LOOKBACK_HOURS = 48


@dataclass(frozen=True)
class Options:
    """What one compaction run does (the command line's options)."""

    min_age_seconds: int = 3600
    project: str = ""
    topics: tuple[str, ...] = ()
    part_bytes: int = DEFAULT_PART_BYTES
    part_rows: int = DEFAULT_PART_ROWS
    threads: int = 16
    direct_bytes: int = DEFAULT_DIRECT_BYTES
    stop_after: str = ""  # "write" or "commit": simulates a crash after that phase
    slice_bytes: int = DEFAULT_DIRECT_BYTES  # a big hour is merged and written in slices of about this input
    round_keys: int = DEFAULT_ROUND_KEYS  # keys listed, planned and compacted per round
    resources_table: str = ""  # its topics are listed too (a topic may have only inline-logged requests)
    log_lookback_hours: int = DEFAULT_LOG_LOOKBACK_HOURS  # how far back inline-logged requests are looked for


@dataclass
class Planned:
    hours: dict[planning.HourId, planning.HourListing]
    plans: list[planning.HourPlan]
    etags: dict[planning.HourId, str]  # the ETag each plan's old manifest was read with ("" = none)

    @property
    def work(self) -> list[planning.HourPlan]:
        return [p for p in self.plans if p.work]


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
    lease_seconds: int = lock.DEFAULT_LEASE_SECONDS,
    on_phase: Callable[[str], None] | None = None,
    slice_bytes: int = DEFAULT_DIRECT_BYTES,
    round_keys: int = DEFAULT_ROUND_KEYS,
    messages_table: str = "",
    resources_table: str = "",
    log_lookback_hours: int = DEFAULT_LOG_LOOKBACK_HOURS,
) -> dict[str, Any]:
    """Run one compaction under the archive maintenance lock; return a report.

    ``now`` (epoch seconds) fixes the clock of the age cut-off and of the lock's lease. ``on_phase`` is
    called with "planned", "written" and "committed" as each phase ends. :class:`lock.LockHeld` when
    another run holds the lock, :class:`lock.LockLost` when this run's lease ran out and another run
    took the lock over (this run then commits and deletes nothing more).
    """
    opts = Options(min_age_seconds, project, tuple(topics or ()), part_bytes, part_rows, threads, direct_bytes,
                   stop_after, slice_bytes, round_keys, resources_table, log_lookback_hours)
    clock: lock.Clock = (lambda: now) if now is not None else time.time
    cfg = common.AwsConfig.from_env(threads, messages_table)
    s3c = common.s3(cfg)
    lease = lock.acquire(s3c, bucket, "compact", clock, lease_seconds)
    try:
        return run_locked(spark, bucket, cfg, lease, opts, on_phase or (lambda phase: None))
    finally:
        lease.release()


def plan(bucket: str, cfg: common.AwsConfig, opts: Options, now_ms: int, listing: Listing) -> Planned:
    """Read the manifests (with their ETags) of the listed hours that need one, and plan them."""
    raw, arch = listing
    hours = planning.group_listing(raw, arch)
    wanted = [(h.topic, h.hour) for h in hours.values() if planning.needs_manifest(h)]
    versions = tasks.read_manifest_versions(bucket, cfg, wanted)
    manifests = {hid: m for hid, (m, _) in versions.items()}
    plans = planning.plan_compaction(hours, manifests, now_ms, opts.min_age_seconds * 1000)
    return Planned(hours, plans, {hid: etag for hid, (_, etag) in versions.items()})


def run_locked(
    spark: Any, bucket: str, cfg: common.AwsConfig, lease: lock.Lease, opts: Options, on_phase: Callable[[str], None]
) -> dict[str, Any]:
    """Every round of the selection (listing_rounds); one report summing them."""
    total: dict[str, Any] = {}
    more, inline = log_items.sources(cfg, opts.resources_table, opts.project, bool(opts.topics),
                                     int(lease.clock() * 1000) - opts.min_age_seconds * 1000, opts.log_lookback_hours)
    rounds = listing_rounds(common.s3(cfg), bucket, opts.project, list(opts.topics), opts.threads, opts.round_keys,
                            more, inline)
    for n, listing in enumerate(rounds):
        if n:
            lease.renew()
        report = run_round(spark, bucket, cfg, lease, opts, on_phase, listing)
        total = add_reports(total, report)
        total["rounds"] = n + 1
        if "stopped_after" in report:
            break
    return total


def add_reports(total: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """Numbers summed (nested dicts of numbers too), anything else as the latest round says."""
    out = dict(total)
    for key, value in report.items():
        old = out.get(key)
        if isinstance(value, (int, float)) and isinstance(old, (int, float)) and not isinstance(value, bool):
            out[key] = round(old + value, 3) if isinstance(value, float) or isinstance(old, float) else old + value
        elif isinstance(value, dict) and isinstance(old, dict):
            out[key] = add_reports(old, value)
        else:
            out[key] = value
    return out


def run_round(
    spark: Any,
    bucket: str,
    cfg: common.AwsConfig,
    lease: lock.Lease,
    opts: Options,
    on_phase: Callable[[str], None],
    listing: Listing,
) -> dict[str, Any]:
    s3c = common.s3(cfg)
    t0 = time.monotonic()
    now_ms = int(lease.clock() * 1000)
    planned = plan(bucket, cfg, opts, now_ms, listing)
    work = planned.work
    t_plan = time.monotonic()
    common.progress("compact", f"planned {len(work)} topic hours, {sum(len(p.new_raw) for p in work):,} new raw "
                               f"objects, {sum(len(p.covered_raw) for p in planned.plans):,} already covered")
    on_phase("planned")
    report: dict[str, Any] = {
        "job": "compact",
        "bucket": bucket,
        "hours": len(work),
        "raw_objects_in": sum(len(p.new_raw) for p in work),
        "raw_bytes_in": sum(planned.hours[planning.hour_id(p.topic, p.hour)].raw[k] for p in work for k in p.new_raw),
        "merged_generations": sum(1 for p in work if p.old is not None),
    }
    infos = write(spark, bucket, cfg, planned, opts, report) if work else {}
    t_write = time.monotonic()
    report["messages"] = sum(f.rows for fs in infos.values() for f in fs)
    report["parquet_files_out"] = sum(len(fs) for fs in infos.values())
    report["parquet_bytes_out"] = sum(f.size for fs in infos.values() for f in fs)
    if work:
        common.progress("compact", f"wrote {report['parquet_files_out']} parquet files ({report['messages']:,} "
                                   "messages); committing manifests")
    on_phase("written")
    if opts.stop_after == "write":
        report["stopped_after"] = "write"
        return report

    lease.renew()  # LockLost here: another run owns the archive now, commit nothing
    created = layout.format_time(datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc))
    committed, conflicts = commit(s3c, bucket, planned, infos, created, opts.threads)
    report["manifests_out"] = len(committed)
    report["manifest_conflicts"] = len(conflicts)
    t_commit = time.monotonic()
    if committed:
        common.progress("compact", f"committed {len(committed)} manifests; deleting covered raw objects")
    on_phase("committed")
    if opts.stop_after == "commit":
        report["stopped_after"] = "commit"
        return report

    lease.renew()  # LockLost here: delete nothing, the next run cleans up
    cleanup(s3c, bucket, planned, committed, conflicts, opts.threads, report)
    report["seconds"] = phase_seconds(t0, t_plan, t_write, t_commit, time.monotonic())
    return report


def phase_seconds(t0: float, t_plan: float, t_write: float, t_commit: float, t_end: float) -> dict[str, float]:
    return {
        "plan": round(t_plan - t0, 3),
        "spark": round(t_write - t_plan, 3),
        "commit": round(t_commit - t_write, 3),
        "cleanup": round(t_end - t_commit, 3),
        "total": round(t_end - t0, 3),
    }


def write(
    spark: Any, bucket: str, cfg: common.AwsConfig, planned: Planned, opts: Options, report: dict[str, Any]
) -> dict[planning.HourId, list[layout.ManifestFile]]:
    """The Spark stages: fetch, merge and PUT the part files of every hour with work; their infos per hour."""
    work = planned.work
    sc = spark.sparkContext
    par = max(1, sc.defaultParallelism)
    digests = {planning.hour_id(p.topic, p.hour): p.digest for p in work}
    sizes = {
        hid: planning.hour_input_bytes(p, planned.hours[hid])
        for p in work
        for hid in [planning.hour_id(p.topic, p.hour)]
    }
    units, big = planning.split_direct(work, sizes, opts.direct_bytes, par)
    timers = {name: sc.accumulator(0.0) for name in ("get", "decode", "merge", "parquet", "put")}
    outputs = []
    if units:  # small hours: fetch + merge + write in one task each, no shuffle
        unit_keys = [[(planning.hour_id(p.topic, p.hour), p.new_raw + p.old_files) for p in u] for u in units]
        direct = tasks.direct_fn(bucket, cfg, digests, opts.part_bytes, opts.part_rows, timers)
        outputs.append(sc.parallelize(unit_keys, len(unit_keys)).flatMap(direct))
    groups: list[list[str]] = []
    n_out = 0
    slices: dict[planning.HourId, int] = {}
    if big:  # big hours: reads spread over many tasks, then each time slice of an hour to one writer
        total_keys = sum(len(p.new_raw) for p in big)
        groups = planning.task_groups(big, common.group_size(total_keys, par))
        slices = planning.hour_time_slices(big, sizes, opts.slice_bytes)
        slice_ids = [(topic, hour, s) for (topic, hour), n in slices.items() for s in range(n)]
        n_out = min(len(slice_ids), par * 2)
        slot = planning.hour_slots(slice_ids, n_out)
        fetch = tasks.fetch_tables_fn(bucket, cfg, timers, slices)
        tables = sc.parallelize(groups, len(groups)).flatMap(fetch)
        by_hour = tables.groupByKey(n_out, partitionFunc=lambda sid: slot[sid])
        outputs.append(
            by_hour.mapPartitions(tasks.write_hours_fn(bucket, cfg, digests, opts.part_bytes, opts.part_rows, timers))
        )
    files = (outputs[0] if len(outputs) == 1 else sc.union(outputs)).collect()
    report["task_seconds"] = {name: round(acc.value, 3) for name, acc in timers.items()}
    report["direct_tasks"], report["direct_hours"] = len(units), sum(len(u) for u in units)
    report["shuffle_fetch_tasks"], report["shuffle_hours"], report["write_partitions"] = len(groups), len(big), n_out
    report["shuffle_slices"] = sum(slices.values())
    infos: dict[planning.HourId, list[layout.ManifestFile]] = {}
    for topic, hour, key, nrows, data_bytes, size, first_id, last_id in files:
        infos.setdefault((topic, hour), []).append(layout.ManifestFile(key, nrows, data_bytes, size, first_id, last_id))
    return infos


def commit(
    s3c: Any,
    bucket: str,
    planned: Planned,
    infos: dict[planning.HourId, list[layout.ManifestFile]],
    created: str,
    threads: int,
) -> tuple[dict[planning.HourId, layout.Manifest], set[planning.HourId]]:
    """PUT one manifest per hour, each only over the version it was planned from; (committed, conflicts)."""
    built = {
        planning.hour_id(p.topic, p.hour): planning.build_manifest(p, infos.get(planning.hour_id(p.topic, p.hour), []),
                                                                   created)
        for p in planned.work
    }

    def put(item: tuple[planning.HourId, layout.Manifest]) -> tuple[planning.HourId, bool]:
        hid, manifest = item
        return hid, store.put_manifest(s3c, bucket, manifest, planned.etags.get(hid, ""))

    outcome = common.threaded_map(put, list(built.items()), threads)
    committed = {hid: built[hid] for hid, ok in outcome if ok}
    conflicts = {hid for hid, ok in outcome if not ok}
    if conflicts:
        common.progress("compact", f"{len(conflicts)} hours were committed by another run meanwhile: left alone")
    return committed, conflicts


def cleanup(
    s3c: Any,
    bucket: str,
    planned: Planned,
    committed: dict[planning.HourId, layout.Manifest],
    conflicts: set[planning.HourId],
    threads: int,
    report: dict[str, Any],
) -> None:
    """Delete only what a committed manifest covers or no longer names; hours another run committed
    meanwhile are left alone (their current manifest is not the one this run planned from)."""
    raw_delete: list[str] = []
    stale_delete: list[str] = []
    for p in planned.plans:
        hid = planning.hour_id(p.topic, p.hour)
        current = committed.get(hid, p.old)
        if current is None or hid in conflicts:
            continue
        raw_delete.extend(k for k in p.covered_raw if not layout.is_inline_key(k))
        if hid in committed:  # an inline-logged request has no object: its item expires by its TTL
            raw_delete.extend(k for k in p.new_raw if not layout.is_inline_key(k))
        stale_delete.extend(planning.stale_keys(p, current))
    report["raw_objects_deleted"] = sum(
        common.threaded_map(lambda ks: common.delete_keys(s3c, bucket, ks), common.chunks(raw_delete, 1000), threads)
    )
    report["stale_archive_objects_deleted"] = common.delete_keys(s3c, bucket, stale_delete)
    common.progress("compact", f"done: deleted {report['raw_objects_deleted']:,} raw objects, "
                               f"{report['stale_archive_objects_deleted']} superseded archive objects")


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
    p.add_argument(
        "--slice-bytes",
        type=int,
        default=DEFAULT_DIRECT_BYTES,
        help="bigger hours are merged and written in publish-time slices of about this many input bytes",
    )
    p.add_argument(
        "--round-keys",
        type=int,
        default=DEFAULT_ROUND_KEYS,
        help="the driver lists, plans and compacts the selection in rounds of about this many keys",
    )
    p.add_argument("--resources-table", default="", help="list its topics too (some may have no raw object yet)")
    p.add_argument("--log-lookback-hours", type=int, default=DEFAULT_LOG_LOOKBACK_HOURS,
                   help="look this far back for small publish requests kept in the messages table")
    common.add_lock_arguments(p)
    args = p.parse_args(argv)
    spark = common.get_spark("metro-compact", args.master)
    report = common.run_or_report_lock(
        "compact",
        lambda: compact(
            spark,
            args.bucket,
            min_age_seconds=args.min_age_seconds,
            project=args.project,
            topics=args.topic,
            part_bytes=args.part_bytes,
            part_rows=args.part_rows,
            threads=args.threads,
            direct_bytes=args.direct_bytes,
            lease_seconds=args.lease_seconds,
            slice_bytes=args.slice_bytes,
            round_keys=args.round_keys,
            messages_table=args.messages_table,
            resources_table=args.resources_table,
            log_lookback_hours=args.log_lookback_hours,
        ),
    )
    print(json.dumps(report, indent=None if args.json else 2, default=str))
    return report


if __name__ == "__main__":
    main()
