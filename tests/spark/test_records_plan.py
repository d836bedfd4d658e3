"""Pure pieces of the jobs: raw decoding, part files, envelopes, SQS batching, planning, reports."""

from __future__ import annotations

import base64
import io
import json
import random
from datetime import date, datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from chalicelib.core import payload
from chalicelib.core.queueing import envelope
from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store
from spark_emr import plan, records, reports

TOPIC = "projects/p/topics/t"
HOUR = datetime(2026, 11, 22, 4, tzinfo=timezone.utc)
H0 = int(HOUR.timestamp() * 1000)


def raw_object(ms: int, n: int, size: int = 10, key_attr: str = "", seed: int = 0) -> tuple[str, bytes]:
    rng = random.Random(seed or ms)
    rid = f"{ms:013d}{rng.randrange(10**6):06d}"
    msgs = [
        payload.StoredMessage(f"{rid}{i:03d}", rng.randbytes(size), {"i": str(i)} if i % 2 else {}, key_attr)
        for i in range(n)
    ]
    pt = layout.format_time(datetime.fromtimestamp(ms / 1000, tz=timezone.utc))
    blob, _ = payload.encode(TOPIC, rid, pt, msgs)
    return payload.raw_key(TOPIC, rid, pt), blob


def test_raw_rows_decode_every_message_with_offsets() -> None:
    key, blob = raw_object(H0 + 1234, 5, key_attr="k")
    rows = records.raw_rows(key, blob)
    assert [r[records.MESSAGE_ID][-3:] for r in rows] == ["000", "001", "002", "003", "004"]
    for r in rows:
        off, data = r[records.OFFSET], r[records.DATA]
        assert blob[off : off + len(data)] == data
        assert r[records.TOPIC] == TOPIC and r[records.RAW_KEY] == key and r[records.ORDERING_KEY] == "k"
        assert records.micros(r[records.PUBLISH_TIME]) == (H0 + 1234) * 1000
    assert rows[1][records.ATTRIBUTES] == {"i": "1"} and rows[0][records.ATTRIBUTES] == {}
    assert records.raw_counts(blob[: blob.index(b"\n") + 1]) == (5, 50)


def test_rows_table_round_trip_and_sort_key() -> None:
    key, blob = raw_object(H0 + 5, 3)
    rows = records.raw_rows(key, blob)
    table = records.rows_to_table(rows)
    assert table.schema == store.arrow_schema()
    back = records.archive_rows(table, TOPIC)
    assert [r[:6] for r in back] == [(*r[:6],) for r in rows]
    assert all(r[records.OFFSET] == -1 for r in back)


def sorted_rows(count: int) -> list[records.Row]:
    rows: list[records.Row] = []
    for i in range(count):
        key, blob = raw_object(H0 + i * 10, 7, size=100, seed=i + 1)
        rows.extend(records.raw_rows(key, blob))
    return sorted(rows, key=lambda r: (r[records.PUBLISH_TIME], r[records.MESSAGE_ID]))


def test_part_writer_is_deterministic_whatever_the_batches() -> None:
    rows = sorted_rows(30)  # 210 rows of 100 bytes
    whole = records.split_parts(records.rows_to_table(rows), TOPIC, HOUR, "dg", part_bytes=5_000, part_rows=10**6)
    assert [p.info.rows for p in whole] == [50, 50, 50, 50, 10]
    streamed: list[records.Part] = []
    writer = records.PartWriter(TOPIC, HOUR, "dg", 5_000, 10**6, streamed.append)
    for i in range(0, len(rows), 17):
        writer.add(records.rows_to_table(rows[i : i + 17]))
    infos = writer.close()
    assert [p.key for p in streamed] == [p.key for p in whole] == [f.key for f in infos]
    assert [p.body for p in streamed] == [p.body for p in whole]
    assert whole[0].key == layout.part_key(TOPIC, HOUR, "dg", 0)
    back = pa.concat_tables(pq.read_table(io.BytesIO(p.body)) for p in whole)
    assert back.column("message_id").to_pylist() == [r[records.MESSAGE_ID] for r in rows]
    assert sum(p.info.data_bytes for p in whole) == 21_000
    assert whole[1].info.first_id == rows[50][records.MESSAGE_ID]
    by_rows = records.split_parts(records.rows_to_table(rows), TOPIC, HOUR, "dg", part_bytes=10**9, part_rows=100)
    assert [p.info.rows for p in by_rows] == [100, 100, 10]


def test_part_writer_drops_repeated_ids_across_batches() -> None:
    rows = sorted_rows(2)
    doubled = [r for r in rows for _ in (0, 1)]
    parts = records.split_parts(records.rows_to_table(doubled[:5]), TOPIC, HOUR, "d", 10**9, 10**6)
    assert parts[0].info.rows == 3
    out: list[records.Part] = []
    w = records.PartWriter(TOPIC, HOUR, "d", 10**9, 10**6, out.append)
    w.add(records.rows_to_table(doubled[:3]))
    w.add(records.rows_to_table(doubled[3:]))
    assert w.close()[0].rows == len(rows)


def test_raw_tables_group_by_hour_and_merge_sorts_and_dedupes() -> None:
    items = [raw_object(H0 + 3_600_000 + 5, 2, seed=9), raw_object(H0 + 50, 3, seed=1), raw_object(H0 + 10, 2, seed=2)]
    tables = records.raw_tables(items)
    assert sorted(tables) == [(TOPIC, H0), (TOPIC, H0 + 3_600_000)]
    first = tables[(TOPIC, H0)]
    assert first.num_rows == 5 and first.schema == store.arrow_schema()
    back = records.ipc_to_table(records.table_to_ipc(first))
    assert back.equals(first)
    merged = records.merge_tables([back, first.slice(0, 2)])  # a repeat of two rows
    ids = merged.column("message_id").to_pylist()
    assert len(ids) == 5 and ids == sorted(ids)
    rows = records.raw_rows(*items[1]) + records.raw_rows(*items[2])
    assert sorted(ids) == sorted(r[records.MESSAGE_ID] for r in rows)
    assert {d for d in merged.column("data").to_pylist()} == {r[records.DATA] for r in rows}
    assert records.merge_tables([]).num_rows == 0


def test_envelopes_inline_pointer_and_too_large() -> None:
    key, blob = raw_object(H0 + 1, 1, size=10, key_attr="ok")
    (row,) = records.raw_rows(key, blob)
    kind, out = records.to_envelope(row)
    assert kind == "inline" and out is not None and out.group == "ok"
    env = envelope.decode(out.body)
    assert env.data == row[records.DATA] and env.ordering_key == "ok" and env.publish_time.endswith("Z")
    big = (*row[:5], b"x" * (64 * 1024 + 1), *row[6:])
    kind, out = records.to_envelope(big)
    assert kind == "pointer" and out is not None
    env = envelope.decode(out.body)
    assert (env.s3_key, env.offset, env.length) == (key, row[records.OFFSET], 64 * 1024 + 1)
    archived_big = (*big[:8], -1)
    kind, out = records.to_envelope(archived_big)
    assert kind == "inline" and out is not None and len(base64.b64decode(json.loads(out.body)["d"])) == 65537
    huge = (*big[:5], b"y" * 200_000, *big[6:8], -1)
    assert records.to_envelope(huge) == ("too_large", None)
    no_key = (*row[:3], "", *row[4:])
    assert records.to_envelope(no_key)[1].group == row[records.MESSAGE_ID]  # type: ignore[union-attr]


def test_sqs_batches_respect_count_and_size() -> None:
    items = [records.Outgoing(str(i), "x" * 30_000, str(i)) for i in range(25)]
    batches = list(records.sqs_batches(items))
    assert all(len(b) <= 10 and sum(len(o.body) for o in b) <= 256 * 1024 for b in batches)
    assert [o.message_id for b in batches for o in b] == [str(i) for i in range(25)]
    small = list(records.sqs_batches(records.Outgoing(str(i), "b", "g") for i in range(25)))
    assert [len(b) for b in small] == [10, 10, 5]
    entries = records.batch_entries(small[0], fifo=True)
    assert entries[0] == {"Id": "0", "MessageBody": "b", "MessageGroupId": "g", "MessageDeduplicationId": "0"}
    assert "MessageGroupId" not in records.batch_entries(small[0], fifo=False)[0]


def test_load_filter_uses_chalicelib_filters_when_present() -> None:
    assert records.load_filter("") is None
    matcher = records.load_filter('attributes.i = "1"')
    try:
        from chalicelib.core.queueing.filters import parse_filter  # noqa: F401
    except ImportError:
        assert matcher is None
        return
    assert matcher is not None and matcher({"i": "1"}) and not matcher({"i": "2"})


# --- planning ---------------------------------------------------------------------------------


def test_plan_compaction_new_generation_and_leftovers() -> None:
    k1, k2, k3 = (payload.raw_key(TOPIC, f"{H0 + i:013d}000001", layout.format_time(HOUR)) for i in (1, 2, 3))
    young = payload.raw_key(TOPIC, f"{H0 + 3_599_000:013d}000001", layout.format_time(HOUR))
    old_files = [layout.ManifestFile(layout.part_key(TOPIC, HOUR, "old", 0), 10, 100, 50, "a", "b")]
    old = layout.Manifest(TOPIC, HOUR, 1, "old", old_files, [k1])
    listing = plan.group_listing(
        [(k1, 10), (k2, 10), (k3, 10), (young, 10), ("raw/junk", 1)],
        [(old_files[0].key, 50), (layout.manifest_key(TOPIC, HOUR), 5), (layout.part_key(TOPIC, HOUR, "zz", 0), 9)],
    )
    hid = plan.hour_id(TOPIC, HOUR)
    assert plan.needs_manifest(listing[hid])
    now = H0 + 3_600_000
    (p,) = plan.plan_compaction(listing, {hid: old}, now_ms=now, min_age_ms=60_000)
    assert p.new_raw == [k2, k3] and p.covered_raw == [k1] and p.generation == 2
    assert p.digest == layout.input_digest([k1, k2, k3]) and p.old_files == [old_files[0].key]
    m = plan.build_manifest(p, [layout.ManifestFile(layout.part_key(TOPIC, HOUR, p.digest, 0), 3, 3, 3, "a", "c")], "t")
    assert m.raw_keys == sorted([k1, k2, k3]) and m.generation == 2
    assert plan.stale_keys(p, m) == sorted([old_files[0].key, layout.part_key(TOPIC, HOUR, "zz", 0)])
    assert plan.stale_keys(p, None) == []
    groups = plan.task_groups([p], 1)
    assert groups == [[k2], [k3], [old_files[0].key]]
    assert plan.hour_slots([(TOPIC, 2), (TOPIC, 1), (TOPIC, 3)], 2) == {(TOPIC, 1): 0, (TOPIC, 2): 1, (TOPIC, 3): 0}


def test_split_direct_packs_small_hours_and_keeps_big_ones_apart() -> None:
    def hp(h: int) -> plan.HourPlan:
        hour = layout.hour_of_ms(H0 + h * 3_600_000)
        return plan.HourPlan(TOPIC, hour, None, [f"raw/{h}"], [], [], digest="d", generation=1)

    plans = [hp(h) for h in range(6)]
    sizes = {plan.hour_id(p.topic, p.hour): s for p, s in zip(plans, [10, 10, 10, 10, 500, 10])}
    units, big = plan.split_direct(plans, sizes, direct_bytes=100, parallelism=1)
    assert [p.hour for p in big] == [plans[4].hour]
    # 50 small bytes over 2 units per core -> units of at most 25 bytes, in hour order
    assert [[p.hour for p in u] for u in units] == [[plans[i].hour for i in ids] for ids in ((0, 1), (2, 3), (5,))]
    units, big = plan.split_direct(plans, sizes, direct_bytes=0, parallelism=2)
    assert units == [] and len(big) == 6
    one, _ = plan.split_direct(plans[:1], sizes, direct_bytes=100, parallelism=4)
    assert len(one) == 1


def test_plan_compaction_skips_clean_hours() -> None:
    mkey = layout.manifest_key(TOPIC, HOUR)
    part = layout.part_key(TOPIC, HOUR, "d", 0)
    listing = plan.group_listing([], [(mkey, 1), (part, 1)])
    assert not plan.needs_manifest(listing[plan.hour_id(TOPIC, HOUR)])
    assert plan.plan_compaction(listing, {}, H0 * 2, 0) == []


def test_retention_selection() -> None:
    hours = plan.group_listing(
        [(payload.raw_key(TOPIC, f"{H0:013d}000001", layout.format_time(HOUR)), 1)],
        [(layout.manifest_key("projects/q/topics/u", HOUR), 1)],
    )
    now = H0 + 2 * 3_600_000
    assert plan.retention_for(TOPIC, 10, {"projects/p": 5}) == 5
    assert plan.retention_for(TOPIC, 10, {TOPIC: 7, "projects/p": 5}) == 7
    assert len(plan.expired_hours(hours, now, 3600, {})) == 2
    assert len(plan.expired_hours(hours, now, 3601, {})) == 0
    kept = plan.expired_hours(hours, now, 3600, {"projects/q/topics/u": 86400})
    assert [h.topic for h in kept] == [TOPIC]


def test_argo_style_summary() -> None:
    rows = [
        {"project": "p", "topic": "projects/p/topics/t", "day": date(2026, 11, 21), "messages": 3, "bytes": 30},
        {"project": "p", "topic": "projects/p/topics/t", "day": date(2026, 11, 22), "messages": 4, "bytes": 40},
        {"project": "p", "topic": "projects/p/topics/u", "day": date(2026, 11, 22), "messages": 1, "bytes": 5},
    ]
    s = reports.summary("p", rows, datetime(2026, 11, 23, 2, 15, tzinfo=timezone.utc))
    assert s["generated"] == "2026-11-23T02:15:00Z" and s["project"] == "p"
    first = s["metrics"][0]
    assert first["metric"] == "topic.number_of_messages" and first["resource_type"] == "topic"
    assert first["resource_name"] == "t" and first["metric_type"] == "counter" and first["value_type"] == "int64"
    assert first["timeseries"] == [{"timestamp": "2026-11-23T02:15:00Z", "value": 7}]
    by = {(m["metric"], m["resource_name"]): m["timeseries"] for m in s["metrics"]}
    assert by[("topic.number_of_daily_messages", "t")] == [
        {"timestamp": "2026-11-21T00:00:00Z", "value": 3},
        {"timestamp": "2026-11-22T00:00:00Z", "value": 4},
    ]
    assert by[("topic.number_of_bytes", "u")] == [{"timestamp": "2026-11-23T02:15:00Z", "value": 5}]
    assert [p["value"] for p in by[("project.number_of_messages", "p")]] == [8]
    assert [p["value"] for p in by[("project.number_of_bytes", "p")]] == [75]
    assert [p["value"] for p in by[("project.number_of_daily_messages", "p")]] == [3, 5]
    table = reports.daily_table(rows)
    assert table.num_rows == 3 and table.schema == reports.DAILY_SCHEMA
    assert reports.daily_key("p", date(2026, 1, 2)) == "metrics/daily/p/2026/01/02.parquet"


def test_replayed_envelopes_stay_within_sqs_rules() -> None:
    """A long non-ASCII ordering key gets an SQS-safe group id, and U+FFFF travels escaped (and decodes back)."""
    key, blob = raw_object(H0 + 1, 1, size=10, key_attr="ok")
    (row,) = records.raw_rows(key, blob)
    long_key = "ключ с пробелами " * 20  # noqa: RUF001 - Cyrillic on purpose
    odd = list(row)
    odd[records.ORDERING_KEY] = long_key
    odd[records.ATTRIBUTES] = {"odd\uffff": "v\ufffe"}
    kind, out = records.to_envelope(tuple(odd))
    assert kind == "inline" and out is not None
    assert out.group.startswith("h-") and len(out.group) <= 128
    assert "\uffff" not in out.body and "\ufffe" not in out.body
    env = envelope.decode(out.body)
    assert env.ordering_key == long_key and env.attributes == {"odd\uffff": "v\ufffe"}
    [entry] = records.batch_entries([out], fifo=True)
    assert entry["MessageGroupId"] == out.group
