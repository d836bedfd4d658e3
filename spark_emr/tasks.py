"""Functions that run inside Spark tasks: they create their boto3 clients in the task (from the
driver's :class:`~spark_emr.common.AwsConfig`, else the worker's env) and do the S3/SQS I/O.

Each ``*_fn`` returns a closure for ``DataFrame.mapInArrow`` or ``RDD.mapPartitions``; the closures
capture only small plain values (bucket, config, dicts of digests), so they pickle cheaply.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa

from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store
from spark_emr import common, log_items, records

BATCH_ROWS = 10_000

Keep = Callable[[records.Row], bool]


def fetch_blobs(bucket: str, cfg: common.AwsConfig, keys: list[str]) -> Iterator[tuple[str, bytes | None]]:
    """``(key, bytes)`` of raw objects and archive files from S3 (``cfg.threads`` GETs at a time), and of
    inline-logged requests from their messages-table items; None for what is gone."""
    inline = [k for k in keys if layout.is_inline_key(k)]
    if inline:
        if not cfg.messages_table:
            raise RuntimeError(f"{inline[0]} is kept in the messages table: pass --messages-table")
        yield from log_items.read_inline(common.client("dynamodb", cfg), cfg.messages_table, inline)
    s3c = common.s3(cfg)
    stored = [k for k in keys if not layout.is_inline_key(k)]
    yield from common.prefetch_map(lambda k: (k, common.get_bytes(s3c, bucket, k)), stored, cfg.threads)


def fetch_rows(bucket: str, cfg: common.AwsConfig, keys: list[str], keep: Keep | None = None) -> Iterator[records.Row]:
    """Stage rows of raw objects (``.mpub``), inline-logged requests (``.inline``) and archive files
    (``.parquet``) named by ``keys``.

    A raw object (or log item) gone meanwhile is skipped, a missing archive file is an error. ``keep``
    optionally selects rows.
    """
    for key, blob in fetch_blobs(bucket, cfg, keys):
        if blob is None and key.endswith(".parquet"):
            raise RuntimeError(f"archive file {key} is gone (superseded by a compaction meanwhile?)")
        if blob is None:
            continue
        if key.endswith(".parquet"):
            rows = records.archive_rows(store.parquet_to_table(blob), layout.parse_archive_key(key).topic)
        else:
            rows = records.raw_rows(key, blob)
        if keep is None:
            yield from rows
        else:
            yield from (r for r in rows if keep(r))


def fetch_fn(
    bucket: str, cfg: common.AwsConfig, keep: Keep | None = None
) -> Callable[[list[str]], Iterator[records.Row]]:
    """For ``RDD.flatMap`` over key groups."""

    def run(keys: list[str]) -> Iterator[records.Row]:
        return fetch_rows(bucket, cfg, keys, keep)

    return run


HourId = tuple[str, int]
FileRow = tuple[str, int, str, int, int, int, str, str]  # topic, hour ms, key, rows, data bytes, size, first, last


Timers = Mapping[str, Any]  # name -> Spark accumulator of seconds (task time spent per phase)


def _add(timers: Timers | None, name: str, since: float) -> float:
    now = time.monotonic()
    if timers is not None and name in timers:
        timers[name].add(now - since)
    return now


DECODE_BATCH = 64  # raw objects decoded into one Arrow table at a time


def fetch_hour_tables(
    bucket: str, cfg: common.AwsConfig, keys: list[str], timers: Timers | None = None
) -> Iterator[tuple[HourId, pa.Table]]:
    """Arrow tables (archive schema, unsorted) of the raw objects (inline-logged requests included) and archive
    files named by ``keys``.

    GETs run on ``cfg.threads`` threads ahead of the decoding (``common.prefetch_map``), so decoding
    one batch overlaps fetching the next. A raw object gone meanwhile was expired by retention:
    nothing to archive. An archive file of the committed generation must be there: merging without
    it would drop its messages, so its absence is an error.
    """
    batch: list[tuple[str, bytes]] = []

    def decode() -> list[tuple[HourId, pa.Table]]:
        t = time.monotonic()
        out = list(records.raw_tables(batch).items())
        batch.clear()
        _add(timers, "decode", t)
        return out

    t = time.monotonic()
    for key, blob in fetch_blobs(bucket, cfg, keys):
        t = _add(timers, "get", t)
        if key.endswith(".parquet"):
            if blob is None:
                raise RuntimeError(f"archive file named by a manifest is missing: {key}")
            ak = layout.parse_archive_key(key)
            yield (ak.topic, layout.hour_ms(ak.hour)), store.parquet_to_table(blob)
        elif blob is not None:
            batch.append((key, blob))
            if len(batch) >= DECODE_BATCH:
                yield from decode()
        t = time.monotonic()
    if batch:
        yield from decode()


SliceId = tuple[str, int, int]  # topic, hour ms, time slice of the hour (records.time_slices)


def fetch_tables(
    bucket: str,
    cfg: common.AwsConfig,
    keys: list[str],
    timers: Timers | None = None,
    slices: Mapping[HourId, int] | None = None,
) -> Iterator[tuple[SliceId, bytes]]:
    """The shuffle path's fetch: ``(topic, hour ms, slice) -> Arrow IPC bytes``; an hour planned in
    several time slices is cut here, so each slice is merged and written by its own task."""
    for hid, table in fetch_hour_tables(bucket, cfg, keys, timers):
        t = time.monotonic()
        for piece, rows in records.time_slices(table, hid[1], (slices or {}).get(hid, 1)):
            yield (hid[0], hid[1], piece), records.table_to_ipc(rows)
        _add(timers, "decode", t)


def fetch_tables_fn(
    bucket: str, cfg: common.AwsConfig, timers: Timers | None = None, slices: Mapping[HourId, int] | None = None
) -> Callable[[list[str]], Iterator[tuple[SliceId, bytes]]]:
    def run(keys: list[str]) -> Iterator[tuple[SliceId, bytes]]:
        return fetch_tables(bucket, cfg, keys, timers, slices)

    return run


def write_hour(
    bucket: str,
    cfg: common.AwsConfig,
    hid: HourId,
    tables: Iterable[pa.Table],
    digest: str,
    part_bytes: int,
    part_rows: int,
    timers: Timers | None = None,
    first_index: int = 0,
) -> list[FileRow]:
    """Merge an hour's tables (sort, drop repeats), cut deterministic parts, PUT them on threads."""
    s3c = common.s3(cfg)
    t = time.monotonic()
    table = records.merge_tables(tables)
    t = _add(timers, "merge", t)
    parts = records.split_parts(table, hid[0], layout.hour_of_ms(hid[1]), digest, part_bytes, part_rows, first_index)
    t = _add(timers, "parquet", t)

    def put(p: records.Part) -> None:
        s3c.put_object(Bucket=bucket, Key=p.key, Body=p.body, ContentType="application/vnd.apache.parquet")

    common.threaded_map(put, parts, cfg.threads)
    _add(timers, "put", t)
    return [
        (hid[0], hid[1], p.key, p.info.rows, p.info.data_bytes, p.info.size, p.info.first_id, p.info.last_id)
        for p in parts
    ]


def write_hours_fn(
    bucket: str,
    cfg: common.AwsConfig,
    digests: Mapping[HourId, str],
    part_bytes: int,
    part_rows: int,
    timers: Timers | None = None,
) -> Callable[[Iterator[tuple[SliceId, Any]]], Iterator[FileRow]]:
    """The shuffle path's writer, for ``mapPartitions`` after ``groupByKey``: one time slice of an hour at
    a time (its parts numbered from ``slice * records.SLICE_STRIDE``)."""

    def run(groups: Iterator[tuple[SliceId, Any]]) -> Iterator[FileRow]:
        for (topic, hour_ms, piece), blobs in groups:
            hid = (topic, hour_ms)
            tables = (records.ipc_to_table(b) for b in blobs)
            yield from write_hour(bucket, cfg, hid, tables, digests[hid], part_bytes, part_rows, timers,
                                  piece * records.SLICE_STRIDE)

    return run


def direct_fn(
    bucket: str,
    cfg: common.AwsConfig,
    digests: Mapping[HourId, str],
    part_bytes: int,
    part_rows: int,
    timers: Timers | None = None,
) -> Callable[[list[tuple[HourId, list[str]]]], Iterator[FileRow]]:
    """The direct path, for ``flatMap`` over units of small hours: each hour fetched, merged and written
    by one task, no shuffle."""

    def run(unit: list[tuple[HourId, list[str]]]) -> Iterator[FileRow]:
        for hid, keys in unit:
            tables = [table for got, table in fetch_hour_tables(bucket, cfg, keys, timers) if got == hid]
            yield from write_hour(bucket, cfg, hid, tables, digests[hid], part_bytes, part_rows, timers)

    return run


def header_counts(bucket: str, cfg: common.AwsConfig, key: str) -> tuple[int, int]:
    """(messages, body bytes) of a raw object from its header (a 64 KiB range GET, more if needed)."""
    s3c = common.s3(cfg)
    blob = common.get_bytes(s3c, bucket, key, "bytes=0-65535")
    if blob is None:
        return 0, 0
    if b"\n" not in blob:
        blob = common.get_bytes(s3c, bucket, key) or b""
        if not blob:
            return 0, 0
    return records.raw_counts(blob)


def read_manifest_versions(
    bucket: str, cfg: common.AwsConfig, hours: list[tuple[str, datetime]]
) -> dict[tuple[str, int], tuple[layout.Manifest | None, str]]:
    """Manifests of ``(topic, hour)`` pairs with their ETags, fetched on threads (driver side)."""
    s3c = common.s3(cfg)

    def one(th: tuple[str, datetime]) -> tuple[tuple[str, int], tuple[layout.Manifest | None, str]]:
        topic, hour = th
        return (topic, layout.hour_ms(hour)), store.read_manifest_version(s3c, bucket, topic, hour)

    return dict(common.threaded_map(one, hours, cfg.threads))
