"""Functional: the jobs on local[2] against a moto S3/SQS/DynamoDB server."""

from __future__ import annotations

import io
import json
import random
import time
from datetime import datetime, timezone
from typing import Any

import pyarrow.parquet as pq
import pytest

from chalicelib.core.queueing import envelope
from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store
from spark_emr import compact, metrics, replay, retention
from tests.spark.helpers import archive_view, list_keys, publish, snapshot

pytestmark = pytest.mark.spark

TOPIC = "projects/proj/topics/orders"
OTHER = "projects/proj/topics/audit"
HOUR_MS = 3_600_000


def base_ms(hours_ago: int = 6) -> int:
    now = int(time.time() * 1000)
    return now - now % HOUR_MS - hours_ago * HOUR_MS


def test_compaction_archives_every_message_exactly_once(spark: Any, s3: Any, bucket: str) -> None:
    rng = random.Random(7)
    base = base_ms()
    expected: dict[str, bytes] = {}
    for i in range(200):  # 2,000 messages in 200 raw objects over 3 hours
        _, bodies = publish(s3, bucket, TOPIC, base + i * 54_000, 10, size=rng.randrange(1, 300), rng=rng)
        expected.update(bodies)
    before = len(list_keys(s3, bucket))
    assert before == 200

    report = compact.compact(spark, bucket, min_age_seconds=60)
    assert report["raw_objects_in"] == 200 and report["messages"] == 2000 and report["hours"] == 3
    assert report["direct_hours"] == 3 and report["shuffle_hours"] == 0
    after = list_keys(s3, bucket)
    assert not [k for k in after if k.startswith("raw/")]
    assert before / len(after) >= 20, after
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen) == set(expected) and set(seen.values()) == {1}
    assert bodies == expected

    state = snapshot(s3, bucket)
    again = compact.compact(spark, bucket, min_age_seconds=60)
    assert again["hours"] == 0 and again["raw_objects_deleted"] == 0
    assert snapshot(s3, bucket) == state

    # the service's fallback when a raw object is gone
    sample = [*rng.sample(sorted(expected), 25), f"{base - HOUR_MS:013d}000000000"]
    found = store.read_archived_bodies(s3, bucket, TOPIC, sample)
    assert set(found) == set(sample[:-1])
    for mid, (data, attrs, okey) in found.items():
        assert data == expected[mid] and attrs == {"i": mid[-3:]} and okey == ""


def test_interrupted_runs_never_lose_or_duplicate(spark: Any, s3: Any, bucket: str) -> None:
    rng = random.Random(11)
    base = base_ms(5)
    expected: dict[str, bytes] = {}
    for i in range(20):
        expected.update(publish(s3, bucket, TOPIC, base + i * 60_000, 5, rng=rng)[1])
    # crash after the parts, before any manifest: nothing committed, raw objects still there
    r = compact.compact(spark, bucket, min_age_seconds=0, direct_bytes=0, stop_after="write")
    assert r["parquet_files_out"] == 1 and r["shuffle_hours"] == 1 and r["direct_hours"] == 0
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1} and bodies == expected
    compact.compact(spark, bucket, min_age_seconds=0, direct_bytes=0)
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1} and bodies == expected
    assert not [k for k in list_keys(s3, bucket) if k.startswith("raw/")]

    # late raw objects for the archived hour and a new hour: a new generation of the hour
    for i in range(10):
        expected.update(publish(s3, bucket, TOPIC, base + 30 * 60_000 + i * 1000, 3, rng=rng)[1])
        expected.update(publish(s3, bucket, TOPIC, base + HOUR_MS + i * 1000, 3, rng=rng)[1])
    old_manifest = store.read_manifest(s3, bucket, TOPIC, layout.hour_of_ms(base))
    assert old_manifest is not None and old_manifest.generation == 1
    r = compact.compact(spark, bucket, min_age_seconds=0, direct_bytes=0, stop_after="write", part_rows=40)
    assert r["merged_generations"] == 1
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1} and bodies == expected
    # crash after the commit, before the raw objects and the old generation are deleted
    r = compact.compact(spark, bucket, min_age_seconds=0, direct_bytes=0, stop_after="commit", part_rows=40)
    assert r["manifests_out"] == 2
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1} and bodies == expected
    manifest = store.read_manifest(s3, bucket, TOPIC, layout.hour_of_ms(base))
    assert manifest is not None and manifest.generation == 2 and manifest.rows == 130
    assert len(manifest.files) == 4 and not manifest.file_keys() & old_manifest.file_keys()
    # the re-run finds nothing new, deletes the covered raw objects and the superseded files
    r = compact.compact(spark, bucket, min_age_seconds=0, direct_bytes=0, part_rows=40)
    assert r["hours"] == 0 and r["raw_objects_deleted"] == 20 and r["stale_archive_objects_deleted"] >= 1
    keys = list_keys(s3, bucket)
    assert not [k for k in keys if k.startswith("raw/")]
    hour_keys = [k for k in keys if k.startswith(layout.archive_hour_prefix(TOPIC, layout.hour_of_ms(base)))]
    assert sorted(hour_keys) == sorted(manifest.file_keys() | {layout.manifest_key(TOPIC, manifest.hour)})
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1} and bodies == expected
    ids = sorted(expected)
    found = store.read_archived_bodies(s3, bucket, TOPIC, ids)
    assert {k: v[0] for k, v in found.items()} == expected


def test_replay_standard_and_fifo_queues(spark: Any, s3: Any, bucket: str, moto_endpoint: str) -> None:
    import boto3

    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    rng = random.Random(3)
    base = base_ms(4)
    bodies: dict[str, bytes] = {}
    attrs: dict[str, dict[str, str]] = {}
    for i in range(12):  # archived
        okey = f"k{i % 3}"
        _, b = publish(
            s3,
            bucket,
            TOPIC,
            base + i * 60_000,
            4,
            rng=rng,
            ordering_key=okey,
            attributes={"color": "red" if i % 2 else "blue"},
        )
        bodies.update(b)
        attrs.update({m: {"color": "red" if i % 2 else "blue"} for m in b})
    compact.compact(spark, bucket, min_age_seconds=0)
    # still raw: a small one and one with a body above 64 KiB
    _k_small, b_small = publish(
        s3, bucket, TOPIC, base + 20 * 60_000, 2, rng=rng, ordering_key="k1", attributes={"color": "red"}
    )
    k_big, b_big = publish(
        s3, bucket, TOPIC, base + 21 * 60_000, 1, size=70_000, rng=rng, ordering_key="k2", attributes={"color": "red"}
    )
    bodies.update(b_small)
    bodies.update(b_big)
    start = datetime.fromtimestamp((base + 2 * 60_000) / 1000, tz=timezone.utc)
    end = datetime.fromtimestamp((base + 30 * 60_000) / 1000, tz=timezone.utc)
    in_range = {m for m in bodies if base + 2 * 60_000 <= int(m[:13]) < base + 30 * 60_000}

    q = sqs.create_queue(QueueName="replay-std")["QueueUrl"]
    r = replay.replay(spark, bucket, TOPIC, start, end, q)
    assert r["sent"] == len(in_range) == 10 * 4 + 3 and r["pointer"] == 1 and r["too_large"] == 0
    got = drain(sqs, q)
    assert {e.message_id for e in got} == in_range
    for e in got:
        if e.inline:
            assert e.data == bodies[e.message_id]
        else:
            assert (e.s3_key, e.length) == (k_big, 70_000)
            blob = s3.get_object(Bucket=bucket, Key=e.s3_key, Range=f"bytes={e.offset}-{e.offset + e.length - 1}")
            assert blob["Body"].read() == bodies[e.message_id]

    fifo = sqs.create_queue(QueueName="replay.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    r = replay.replay(spark, bucket, TOPIC, start, end, fifo, filter_text='attributes.color = "red"')
    got = drain(sqs, fifo)
    filtered = records_filter_available()
    if filtered:
        want = {m for m in in_range if m in b_small or m in b_big or attrs.get(m, {}).get("color") == "red"}
    else:
        want = in_range
    assert {e.message_id for e in got} == want and r["sent"] == len(want)
    by_key: dict[str, list[str]] = {}
    for e in got:
        by_key.setdefault(e.ordering_key, []).append(e.message_id)
    for okey, ids in by_key.items():
        assert okey and ids == sorted(ids), f"ordering key {okey} out of order"


def records_filter_available() -> bool:
    from spark_emr import records

    return records.load_filter('attributes.color = "red"') is not None


def drain(sqs: Any, url: str) -> list[envelope.Envelope]:
    out = []
    for _ in range(50):
        resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        msgs = resp.get("Messages", [])
        if not msgs:
            break
        out.extend(envelope.decode(m["Body"]) for m in msgs)
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)]
        )
    return out


def test_replay_enumerates_raw_objects_with_the_messages_table(
    spark: Any, s3: Any, bucket: str, moto_endpoint: str
) -> None:
    import boto3

    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    table = f"messages-{bucket}"
    ddb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "topic", "KeyType": "HASH"}, {"AttributeName": "rid", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "topic", "AttributeType": "S"},
            {"AttributeName": "rid", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    base = base_ms(3)
    bodies: dict[str, bytes] = {}
    for i in range(6):
        key, b = publish(s3, bucket, OTHER, base + i * 60_000, 2)
        bodies.update(b)
        rid = key.rsplit("/", 1)[1][:-5]
        ddb.put_item(TableName=table, Item={"topic": {"S": OTHER}, "rid": {"S": rid}, "key": {"S": key}})
    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    q = sqs.create_queue(QueueName=f"replay-{bucket}")["QueueUrl"]
    start = datetime.fromtimestamp(base / 1000, tz=timezone.utc)
    end = datetime.fromtimestamp((base + 3 * 60_000) / 1000, tz=timezone.utc)
    r = replay.replay(spark, bucket, OTHER, start, end, q, messages_table=table)
    assert r["raw_objects"] == 3 and r["sent"] == 6
    assert {e.message_id for e in drain(sqs, q)} == {m for m in bodies if int(m[:13]) < base + 3 * 60_000}


def test_metrics_then_retention(spark: Any, s3: Any, bucket: str) -> None:
    rng = random.Random(5)
    old = base_ms(30)  # yesterday or so
    recent = base_ms(2)
    for i in range(6):
        publish(s3, bucket, TOPIC, old + i * 60_000, 3, size=10, rng=rng)
        publish(s3, bucket, TOPIC, recent + i * 60_000, 2, size=20, rng=rng)
        publish(s3, bucket, OTHER, recent + i * 60_000, 1, size=5, rng=rng)
    compact.compact(spark, bucket, min_age_seconds=0, topics=[TOPIC])  # TOPIC archived, OTHER still raw
    publish(s3, bucket, TOPIC, recent + 10 * 60_000, 4, size=1, rng=rng)  # one raw object not compacted

    m = metrics.metrics(spark, bucket)
    assert m["messages"] == 18 + 12 + 6 + 4 and m["bytes"] == 180 + 240 + 30 + 4
    by = {(r["topic"], r["day"]): r for r in m["daily"]}
    old_day = str(datetime.fromtimestamp(old / 1000, tz=timezone.utc).date())
    recent_day = str(datetime.fromtimestamp(recent / 1000, tz=timezone.utc).date())
    assert by[(TOPIC, old_day)]["messages"] >= 18
    summary = json.loads(s3.get_object(Bucket=bucket, Key="metrics/summary/proj.json")["Body"].read())
    names = {(x["metric"], x["resource_name"]) for x in summary["metrics"]}
    assert ("topic.number_of_messages", "orders") in names and ("topic.number_of_bytes", "audit") in names
    total = sum(
        p["value"] for x in summary["metrics"] if x["metric"] == "topic.number_of_messages" for p in x["timeseries"]
    )
    assert total == 40
    daily_key = f"metrics/daily/proj/{recent_day.replace('-', '/')}.parquet"
    table = pq.read_table(io.BytesIO(s3.get_object(Bucket=bucket, Key=daily_key)["Body"].read()))
    assert set(table.column("topic").to_pylist()) >= {TOPIC, OTHER}

    # retention: 12 hours keeps the recent hours, removes the old archived hour
    before = list_keys(s3, bucket)
    r = retention.retention(spark, bucket, 12 * 3600)
    assert r["hours"] == 1 and r["messages"] == 18 and r["raw_objects"] == 0 and r["archive_objects"] == 2
    assert r["bytes"] > 0 and r["topics"][TOPIC]["messages"] == 18
    after = list_keys(s3, bucket)
    gone = set(before) - set(after)
    assert gone and all(k.startswith(layout.archive_hour_prefix(TOPIC, layout.hour_of_ms(old))) for k in gone)
    # per-topic override: OTHER keeps nothing older than an hour; its raw objects are 2 hours old
    r = retention.retention(spark, bucket, 12 * 3600, {OTHER: 600}, dry_run=True)
    assert r["raw_objects"] == 6 and r["messages"] == 6 and r["dry_run"]
    assert list_keys(s3, bucket) == after
    r = retention.retention(spark, bucket, 12 * 3600, {OTHER: 600})
    assert r["raw_objects"] == 6 and not [k for k in list_keys(s3, bucket) if k.startswith("raw/proj/audit/")]
    assert retention.retention(spark, bucket, 12 * 3600, {OTHER: 600})["hours"] == 0
