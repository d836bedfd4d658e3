"""Pure conversions used inside tasks: raw objects / archive files <-> rows and Arrow, part files, envelopes.

Nothing here talks to S3 or Spark, so all of it is unit-tested on in-memory bytes.

A *stage row* is the tuple that flows through the Spark jobs: the archive columns plus ``topic``
(the full topic name) and ``offset`` (absolute offset of the body in its raw object; -1 for rows
read back from the archive). Its Spark type is :data:`STAGE_DDL`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chalicelib.core import payload
from chalicelib.core.queueing import envelope, sqs_limits
from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store

ARCHIVE_SCHEMA = store.arrow_schema()
STAGE_FIELDS = (
    "topic",
    "message_id",
    "publish_time",
    "ordering_key",
    "attributes",
    "data",
    "raw_key",
    "request_id",
    "offset",
)
STAGE_DDL = (
    "topic string, message_id string, publish_time timestamp, ordering_key string, "
    "attributes map<string,string>, data binary, raw_key string, request_id string, offset long"
)
# positions in a stage row
TOPIC, MESSAGE_ID, PUBLISH_TIME, ORDERING_KEY, ATTRIBUTES, DATA, RAW_KEY, REQUEST_ID, OFFSET = range(9)

Row = tuple[Any, ...]  # (topic, message_id, publish_time, ordering_key, attributes, data, raw_key, request_id, offset)

INLINE_LIMIT = 64 * 1024  # raw bodies above this travel as an S3 pointer
SQS_MESSAGE_LIMIT = sqs_limits.BATCH_BYTES  # one SQS message body (bytes): the service's own rule
SQS_BATCH_LIMIT = sqs_limits.BATCH_BYTES  # one SendMessageBatch call (sum of bodies)

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def as_utc(dt: datetime) -> datetime:
    """Aware UTC datetime; a naive one is local time (what PySpark hands out for timestamps)."""
    return dt.astimezone(timezone.utc)


def micros(dt: datetime) -> int:
    delta = as_utc(dt) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# --- raw objects ------------------------------------------------------------------------------


def raw_rows(key: str, blob: bytes) -> list[Row]:
    """Decode one raw object into stage rows (one per message, in publish order)."""
    header, messages = payload.decode(blob)
    pt = layout.parse_time(header.publish_time)
    return [
        (header.topic, m.message_id, pt, m.ordering_key, m.attributes, m.data, key, header.request_id, e.offset)
        for m, e in zip(messages, header.entries)
    ]


def raw_counts(blob: bytes) -> tuple[int, int]:
    """(messages, body bytes) of a raw object from its header (``blob`` may be just a prefix)."""
    header = payload.decode_header(blob)
    return len(header.entries), sum(e.length for e in header.entries)


# --- archive files ----------------------------------------------------------------------------


def archive_rows(table: pa.Table, topic: str) -> list[Row]:
    """Archive rows (as read from a part file) -> stage rows."""
    cols = [table.column(name).to_pylist() for name in ARCHIVE_SCHEMA.names]
    return [
        (topic, mid, as_utc(pt), ok or "", dict(attrs or []), data or b"", rk or "", rid or "", -1)
        for mid, pt, ok, attrs, data, rk, rid in zip(*cols)
    ]


def rows_to_table(rows: Iterable[Row]) -> pa.Table:
    """Stage rows -> an archive table (exactly :func:`chalicelib.store.archive.arrow_schema`)."""
    rows = list(rows)
    cols = {
        "message_id": [r[MESSAGE_ID] for r in rows],
        "publish_time": [r[PUBLISH_TIME] for r in rows],
        "ordering_key": [r[ORDERING_KEY] for r in rows],
        "attributes": [list(r[ATTRIBUTES].items()) for r in rows],
        "data": [r[DATA] for r in rows],
        "raw_key": [r[RAW_KEY] for r in rows],
        "request_id": [r[REQUEST_ID] for r in rows],
    }
    return pa.Table.from_pydict(cols, schema=ARCHIVE_SCHEMA)


def raw_tables(items: Iterable[tuple[str, bytes]]) -> dict[tuple[str, int], pa.Table]:
    """Decode raw objects straight into archive tables, one per (topic, hour start ms), unsorted.

    The columnar path of compaction: no per-message Python tuples travel through Spark. Only the
    header is parsed (:func:`chalicelib.core.payload.decode_header`); bodies are sliced from the blob.
    """
    cols: dict[tuple[str, int], dict[str, list[Any]]] = {}
    for key, blob in items:
        header = payload.decode_header(blob)
        pt = layout.parse_time(header.publish_time)
        hid = (header.topic, layout.hour_start_ms(micros(pt) // 1000))
        c = cols.get(hid)
        if c is None:
            c = cols[hid] = {name: [] for name in ARCHIVE_SCHEMA.names}
        entries = header.entries
        n = len(entries)
        c["message_id"].extend([e.message_id for e in entries])
        c["publish_time"].extend([pt] * n)
        c["ordering_key"].extend([e.ordering_key for e in entries])
        c["attributes"].extend([list(e.attributes.items()) for e in entries])
        c["data"].extend([blob[e.offset : e.offset + e.length] for e in entries])
        c["raw_key"].extend([key] * n)
        c["request_id"].extend([header.request_id] * n)
    return {hid: pa.Table.from_pydict(c, schema=ARCHIVE_SCHEMA) for hid, c in cols.items()}


def table_to_ipc(table: pa.Table) -> bytes:
    """Arrow IPC stream bytes: how tables cross the shuffle (one pickled bytes object, not rows)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def ipc_to_table(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def merge_tables(tables: Iterable[pa.Table]) -> pa.Table:
    """Union of archive tables of one hour: sorted by (publish time, message id), each id once."""
    tables = [t.cast(ARCHIVE_SCHEMA) if t.schema != ARCHIVE_SCHEMA else t for t in tables]
    if not tables:
        return ARCHIVE_SCHEMA.empty_table()
    return sort_dedupe(pa.concat_tables(tables))


def sort_dedupe(table: pa.Table) -> pa.Table:
    """Rows sorted by publish time then message id, each message id once (first occurrence kept).

    Sorting computes indices on the two key columns only and skips the (costly: bodies and maps)
    ``take`` when the rows are already in order, the usual case for raw objects listed in key order.
    """
    n = table.num_rows
    if n == 0:
        return table
    keys = [("publish_time", "ascending"), ("message_id", "ascending")]
    idx = pc.sort_indices(table.select(["publish_time", "message_id"]), sort_keys=keys)
    if not pc.all(pc.equal(idx, pa.array(np.arange(n, dtype=np.uint64)))).as_py():
        table = table.take(idx)
    ids = table.column("message_id")
    if pc.count_distinct(ids).as_py() != n:  # repeats: keep the first of each id
        seen: set[str] = set()
        keep = []
        for i, mid in enumerate(ids.to_pylist()):
            if mid not in seen:
                seen.add(mid)
                keep.append(i)
        table = table.take(pa.array(keep, pa.int64()))
    return table


@dataclass(frozen=True)
class Part:
    key: str
    body: bytes
    info: layout.ManifestFile


class PartWriter:
    """Streams the sorted rows of one topic hour into deterministic part files.

    Rows must arrive sorted by (publish time, message id); adjacent repeats of a message id are
    dropped. A part is cut right after the row at which its body bytes reach ``part_bytes`` or its
    row count reaches ``part_rows``, so the same rows always give the same parts, whatever the
    batch boundaries. ``emit`` receives each finished :class:`Part`.
    """

    def __init__(
        self,
        topic: str,
        hour: datetime,
        digest: str,
        part_bytes: int,
        part_rows: int,
        emit: Callable[[Part], None],
        first_index: int = 0,
    ) -> None:
        self.topic, self.hour, self.digest = topic, hour, digest
        self.first_index = first_index  # a time slice's parts are numbered from slice * SLICE_STRIDE
        self.part_bytes, self.part_rows = max(1, part_bytes), max(1, part_rows)
        self.emit = emit
        self.buffer: list[pa.Table] = []
        self.buffered_rows = 0
        self.buffered_bytes = 0
        self.last_id: str | None = None
        self.parts: list[layout.ManifestFile] = []

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        ids = table.column("message_id").to_pylist()
        keep = [i for i in range(len(ids)) if ids[i] != (ids[i - 1] if i else self.last_id)]
        self.last_id = ids[-1]
        if len(keep) != len(ids):
            table = table.take(pa.array(keep, pa.int64()))
        sizes = np.asarray(pc.binary_length(table.column("data")).fill_null(0).to_numpy(zero_copy_only=False))
        start = 0
        while start < table.num_rows:
            acc = self.buffered_bytes + np.cumsum(sizes[start:], dtype=np.int64)
            rows = self.buffered_rows + np.arange(1, len(acc) + 1)
            hits = np.nonzero((acc >= self.part_bytes) | (rows >= self.part_rows))[0]
            if len(hits) == 0:
                self.buffer.append(table.slice(start))
                self.buffered_rows = int(rows[-1])
                self.buffered_bytes = int(acc[-1])
                return
            cut = int(hits[0]) + 1
            self.buffer.append(table.slice(start, cut))
            self.buffered_bytes = int(acc[cut - 1])
            self._flush()
            start += cut

    def _flush(self) -> None:
        if not self.buffer:
            return
        chunk = pa.concat_tables(self.buffer).combine_chunks()
        body = store.table_to_parquet(chunk)
        ids = chunk.column("message_id")
        key = layout.part_key(self.topic, self.hour, self.digest, self.first_index + len(self.parts))
        info = layout.ManifestFile(
            key=key,
            rows=chunk.num_rows,
            data_bytes=self.buffered_bytes,
            size=len(body),
            first_id=str(pc.min(ids).as_py()),
            last_id=str(pc.max(ids).as_py()),
        )
        self.parts.append(info)
        self.buffer, self.buffered_rows, self.buffered_bytes = [], 0, 0
        self.emit(Part(key, body, info))

    def close(self) -> list[layout.ManifestFile]:
        self._flush()
        return self.parts


def split_parts(
    table: pa.Table, topic: str, hour: datetime, digest: str, part_bytes: int, part_rows: int, first_index: int = 0
) -> list[Part]:
    """Cut sorted archive rows into deterministic part files (same rows -> same names and content)."""
    out: list[Part] = []
    writer = PartWriter(topic, hour, digest, part_bytes, part_rows, out.append, first_index)
    writer.add(table)
    writer.close()
    return out


SLICE_STRIDE = 10_000  # part numbers per time slice of an hour (parts of slice s: s * SLICE_STRIDE + n)


def time_slices(table: pa.Table, hour_ms: int, slices: int) -> list[tuple[int, pa.Table]]:
    """Split an hour's rows into ``slices`` equal publish-time ranges: ``[(slice, rows), ...]``, non-empty
    ones only. A message id starts with its publish time, so every copy of a message lands in the same
    slice, and the slices, each sorted, are the hour sorted."""
    if slices <= 1 or table.num_rows == 0:
        return [(0, table)] if table.num_rows else []
    micros = pc.cast(table.column("publish_time"), pa.int64())
    offset = pc.subtract(pc.divide(micros, 1000), hour_ms)
    index = pc.divide(pc.multiply(pc.max_element_wise(offset, 0), slices), layout.HOUR_MS)
    index = pc.min_element_wise(index, slices - 1)
    out = []
    for s in sorted(set(index.to_pylist())):
        out.append((int(s), table.filter(pc.equal(index, s))))
    return out


# --- replay -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outgoing:
    message_id: str
    body: str
    group: str  # MessageGroupId for FIFO queues: the ordering key or message id, made SQS-safe


def to_envelope(row: tuple[Any, ...]) -> tuple[str, Outgoing | None]:
    """Build the SQS body of one stage row: ``("inline"|"pointer"|"too_large", Outgoing|None)``.

    Raw rows (offset >= 0) inline bodies up to 64 KiB and point at the raw object above that;
    archive rows (offset < 0) have no object to point at, so they go inline when the SQS message
    fits and are skipped (counted as too large) otherwise.
    """
    data: bytes = bytes(row[DATA] or b"")
    pt = row[PUBLISH_TIME]
    publish_time = layout.format_time(as_utc(pt)) if isinstance(pt, datetime) else str(pt)
    okey = row[ORDERING_KEY] or ""
    mid = row[MESSAGE_ID]
    attrs = dict(row[ATTRIBUTES] or {})
    offset = row[OFFSET]
    if offset is not None and offset >= 0 and len(data) > INLINE_LIMIT:
        env = envelope.Envelope(
            mid, publish_time, attrs, okey, s3_key=row[RAW_KEY], offset=int(offset), length=len(data)
        )
        kind = "pointer"
    else:
        env = envelope.Envelope(mid, publish_time, attrs, okey, data=data)
        kind = "inline"
    body = sqs_limits.escape_body(envelope.encode(env))  # characters SQS refuses travel as JSON escapes
    if sqs_limits.body_bytes(body) > SQS_MESSAGE_LIMIT:
        return "too_large", None
    return kind, Outgoing(mid, body, sqs_limits.group_id(okey, mid))


def sqs_batches(
    items: Iterable[Outgoing], max_count: int = sqs_limits.BATCH_ENTRIES, max_bytes: int = SQS_BATCH_LIMIT
) -> Iterator[list[Outgoing]]:
    """Group outgoing messages (order kept) into SendMessageBatch calls: <= 10 entries, <= 256 KiB."""
    batch: list[Outgoing] = []
    size = 0
    for item in items:
        n = sqs_limits.body_bytes(item.body)
        if batch and (len(batch) >= max_count or size + n > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


def batch_entries(batch: list[Outgoing], fifo: bool) -> list[dict[str, str]]:
    entries = []
    for i, item in enumerate(batch):
        entry = {"Id": str(i), "MessageBody": item.body}
        if fifo:
            entry["MessageGroupId"] = item.group
            entry["MessageDeduplicationId"] = sqs_limits.safe_id(item.message_id)
        entries.append(entry)
    return entries


def load_filter(text: str) -> Callable[[Mapping[str, str]], bool] | None:
    """``chalicelib.core.queueing.filters.parse_filter(text).matches`` when that module exists, else None."""
    if not text:
        return None
    try:
        from chalicelib.core.queueing import filters
    except ImportError:
        return None
    parse = getattr(filters, "parse_filter", None)
    if parse is None:
        return None
    matcher = parse(text)
    return matcher.matches  # type: ignore[no-any-return]
