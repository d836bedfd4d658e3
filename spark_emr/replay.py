"""Replay: re-enqueue a time range of one topic into one SQS queue, in the subscription envelope format.

    spark-submit --master local[2] spark_emr/replay.py --bucket B --messages-table T \
        --topic projects/p/topics/t --start 2026-11-22T00:00:00Z --end 2026-11-22T06:00:00Z \
        --queue-url https://sqs.../q [--filter 'attributes.k = "v"']

Sources: for each hour of the range, the committed archive (parquet files whose id range overlaps
the range) and the raw objects the hour's manifest does not cover (listed under the raw hour prefix,
or found with one messages-table Query per partition of the topic's log when ``--messages-table`` is given:
only then are the small requests that have no raw object, their bytes in the table's items, found before
compaction archives them). Tasks read them (those with BatchGetItem), keep the messages in ``[start, end)``
that match the filter, then the rows are laid out so that each ordering key sits in one partition in publish
order (:func:`spark_emr.transforms.replay_order`) and each partition is sent sequentially with
SendMessageBatch (<= 10 entries, <= 256 KiB a call).

Bodies: raw messages inline up to 64 KiB, above that an S3 pointer (key, offset, length); archive
messages inline when the SQS message fits, else skipped and counted as ``too_large``. For a
``.fifo`` queue: MessageGroupId = ordering key (or the message id), MessageDeduplicationId = id.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_emr import common

common.ensure_importable()

from chalicelib.core.replay import archive_layout as layout  # noqa: E402
from spark_emr import log_items, records, tasks, transforms  # noqa: E402

COUNTS = ("sent", "inline", "pointer", "too_large", "failed")


def keep_fn(start_us: int, end_us: int, filter_text: str) -> Callable[[records.Row], bool]:
    """Row predicate run in the fetch tasks: publish time in range and the filter (if any) matches."""
    matcher_box: list[Any] = []

    def keep(row: records.Row) -> bool:
        if not matcher_box:
            matcher_box.append(records.load_filter(filter_text))
        us = records.micros(row[records.PUBLISH_TIME])
        if not start_us <= us < end_us:
            return False
        matcher = matcher_box[0]
        return matcher is None or bool(matcher(row[records.ATTRIBUTES]))

    return keep


def send_fn(queue_url: str, cfg: common.AwsConfig) -> Callable[[Iterable[Any]], Iterator[dict[str, int]]]:
    fifo = queue_url.endswith(".fifo")

    def run(rows: Iterable[Any]) -> Iterator[dict[str, int]]:
        sqs = common.client("sqs", cfg)
        counts = dict.fromkeys(COUNTS, 0)

        def outgoing() -> Iterator[records.Outgoing]:
            for row in rows:
                kind, item = records.to_envelope(tuple(row))
                counts[kind] += 1
                if item is not None:
                    yield item

        for batch in records.sqs_batches(outgoing()):
            todo = records.batch_entries(batch, fifo)
            for attempt in range(5):
                resp = sqs.send_message_batch(QueueUrl=queue_url, Entries=todo)
                counts["sent"] += len(resp.get("Successful", []))
                failed_ids = {f["Id"] for f in resp.get("Failed", []) if not f.get("SenderFault")}
                sender_faults = [f for f in resp.get("Failed", []) if f.get("SenderFault")]
                counts["failed"] += len(sender_faults)
                todo = [e for e in todo if e["Id"] in failed_ids]
                if not todo:
                    break
                time.sleep(0.1 * 2**attempt)
            counts["failed"] += len(todo)
        yield counts

    return run


def plan_sources(
    s3c: Any, bucket: str, topic: str, start: datetime, end: datetime, threads: int, raw_keys: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """(raw keys not covered by a manifest, archive part keys overlapping the range)."""
    from chalicelib.store import archive as store

    start_ms, end_ms = int(start.timestamp() * 1000), int(end.timestamp() * 1000)
    hours = [layout.hour_of_ms(ms) for ms in range(layout.hour_start_ms(start_ms), end_ms, layout.HOUR_MS)]
    manifests = common.threaded_map(lambda h: store.read_manifest(s3c, bucket, topic, h), hours, threads)
    if raw_keys is None:
        listed = common.threaded_map(
            lambda h: [o["Key"] for o in common.list_objects(s3c, bucket, layout.raw_hour_prefix(topic, h))],
            hours,
            threads,
        )
        raw_keys = [k for keys in listed for k in keys]
    covered = {k for m in manifests if m for k in m.raw_keys}
    lo, hi = f"{start_ms:013d}", f"{end_ms:013d}"
    raw = sorted(k for k in raw_keys if k not in covered and lo <= layout.parse_raw_key(k).request_id[:13] < hi)
    parts = sorted(f.key for m in manifests if m for f in m.files if f.last_id[:13] >= lo and f.first_id[:13] < hi)
    return raw, parts


def raw_keys_from_table(table: str, topic: str, start: datetime, end: datetime, cfg: common.AwsConfig) -> list[str]:
    """Raw object keys of a time range from the messages table: one Query (paginated) per partition of the log."""
    ddb = common.client("dynamodb", cfg)
    start_ms, end_ms = int(start.timestamp() * 1000), int(end.timestamp() * 1000)
    return [key for key, _ in log_items.log_keys(ddb, table, topic, start_ms, end_ms, inline_only=False)]


def replay(
    spark: Any,
    bucket: str,
    topic: str,
    start: datetime,
    end: datetime,
    queue_url: str,
    filter_text: str = "",
    messages_table: str = "",
    threads: int = 16,
) -> dict[str, Any]:
    cfg = common.AwsConfig.from_env(threads, messages_table)
    s3c = common.s3(cfg)
    t0 = time.monotonic()
    if filter_text and records.load_filter(filter_text) is None:
        print("replay: chalicelib.core.queueing.filters.parse_filter not available, --filter ignored", file=sys.stderr)
    table_keys = raw_keys_from_table(messages_table, topic, start, end, cfg) if messages_table else None
    raw, parts = plan_sources(s3c, bucket, topic, start, end, threads, table_keys)
    counts: Mapping[str, int] = dict.fromkeys(COUNTS, 0)
    common.progress("replay", f"{len(raw):,} raw objects and {len(parts)} archive files in range")
    if raw or parts:
        sc = spark.sparkContext
        par = max(1, sc.defaultParallelism)
        groups = common.chunks(raw, common.group_size(len(raw), par)) + [[k] for k in parts]
        keep = keep_fn(records.micros(start), records.micros(end), filter_text)
        rows = sc.parallelize(groups, len(groups)).flatMap(tasks.fetch_fn(bucket, cfg, keep))
        df = spark.createDataFrame(rows, records.STAGE_DDL)
        ordered = transforms.replay_order(transforms.in_range(df, start, end), par * 2)
        results = ordered.rdd.mapPartitions(send_fn(queue_url, cfg)).collect()
        total = dict.fromkeys(COUNTS, 0)
        for c in results:
            for k in COUNTS:
                total[k] += c[k]
        counts = total
    return {
        "job": "replay",
        "topic": topic,
        "start": layout.format_time(start),
        "end": layout.format_time(end),
        "queue_url": queue_url,
        "raw_objects": len(raw),
        "archive_files": len(parts),
        **counts,
        "seconds": round(time.monotonic() - t0, 3),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = common.base_parser("Re-enqueue a time range of a topic into an SQS queue.")
    p.add_argument("--start", required=True, help="RFC 3339, inclusive")
    p.add_argument("--end", required=True, help="RFC 3339, exclusive")
    p.add_argument("--queue-url", required=True)
    p.add_argument("--filter", default="", help='subscription filter syntax (attributes.k = "v" ...)')
    args = p.parse_args(argv)
    if len(args.topic) != 1:
        p.error("replay wants exactly one --topic")
    spark = common.get_spark("metro-replay", args.master)
    report = replay(
        spark,
        args.bucket,
        args.topic[0],
        layout.parse_time(args.start),
        layout.parse_time(args.end),
        args.queue_url,
        filter_text=args.filter,
        messages_table=args.messages_table,
        threads=args.threads,
    )
    print(json.dumps(report, indent=None if args.json else 2))
    return report


if __name__ == "__main__":
    main()
