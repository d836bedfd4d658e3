"""Small publish requests kept in the messages table (no raw object): compaction archives them with the raw
objects, replay sends them, and the service's archive lookup names them like any raw key."""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from chalicelib.core import payload
from chalicelib.core.log_keys import log_shard
from chalicelib.core.records import LogEntry
from chalicelib.core.replay import archive_layout as layout
from chalicelib.store.log import entry_item
from spark_emr import compact, log_items, replay
from tests.spark.helpers import archive_view, iso, list_keys, publish
from tests.spark.test_pipeline import drain

pytestmark = pytest.mark.spark

PROJECT = "proj"
MIXED = f"projects/{PROJECT}/topics/mixed"
SMALL_ONLY = f"projects/{PROJECT}/topics/small-only"
HOUR_MS = 3_600_000


def base_ms(hours_ago: int) -> int:
    now = int(time.time() * 1000)
    return now - now % HOUR_MS - hours_ago * HOUR_MS


@pytest.fixture()
def ddb(moto_endpoint: str) -> Any:
    import boto3

    return boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture()
def tables(ddb: Any, bucket: str) -> tuple[str, str]:
    """A messages table and a resources table as the service lays them out (keys only: the rest is free)."""
    names = f"messages-{bucket}", f"resources-{bucket}"
    for name, (hash_key, range_key) in zip(names, [("topic", "rid"), ("pk", "sk")]):
        ddb.create_table(
            TableName=name, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": hash_key, "KeyType": "HASH"},
                       {"AttributeName": range_key, "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": hash_key, "AttributeType": "S"},
                                  {"AttributeName": range_key, "AttributeType": "S"}])
    for topic in (MIXED, SMALL_ONLY):
        ddb.put_item(TableName=names[1], Item={"pk": {"S": f"project#{PROJECT}"},
                                               "sk": {"S": "topic#" + topic.rsplit("/", 1)[1]}, "doc": {"S": "{}"}})
    return names


def log_inline(ddb: Any, table: str, topic: str, ms: int, count: int, seed: int,
               ordering_key: str = "") -> dict[str, bytes]:
    """What publish writes for a small request: one item holding the raw bytes, no S3 object, in the partition
    of the topic's log its ordering key (or else its request id) says."""
    rng = random.Random(seed)
    rid = f"{ms:013d}{rng.randrange(10**6):06d}"
    msgs = [payload.StoredMessage(f"{rid}{i:03d}", rng.randbytes(20), {"i": str(i)}, ordering_key)
            for i in range(count)]
    pt = iso(ms)
    blob, start = payload.encode(topic, rid, pt, msgs)
    entry = LogEntry(topic, rid, payload.raw_key(topic, rid, pt, inline=True), start, count, len(blob) - start, pt,
                     ms // 1000 + 7 * 86_400, fanned=True, inline=blob, shard=log_shard(rid, bool(ordering_key)))
    ddb.put_item(TableName=table, Item=entry_item(entry))
    return {m.message_id: m.data for m in msgs}


def log_stored(s3: Any, bucket: str, ddb: Any, table: str, topic: str, ms: int, count: int) -> dict[str, bytes]:
    key, bodies = publish(s3, bucket, topic, ms, count)
    rid = layout.parse_raw_key(key).request_id
    ddb.put_item(TableName=table, Item={"topic": {"S": topic}, "rid": {"S": rid}, "key": {"S": key}})
    return bodies


def test_compaction_archives_inline_logged_requests_with_the_raw_ones(
        spark: Any, s3: Any, bucket: str, ddb: Any, tables: tuple[str, str]) -> None:
    messages, resources = tables
    base = base_ms(5)
    expected: dict[str, dict[str, bytes]] = {MIXED: {}, SMALL_ONLY: {}}
    for i in range(6):  # two hours, requests of both kinds
        ms = base + i * 20 * 60_000
        expected[MIXED].update(log_inline(ddb, messages, MIXED, ms, 3, seed=i))
        expected[MIXED].update(log_stored(s3, bucket, ddb, messages, MIXED, ms + 1, 2))
        expected[SMALL_ONLY].update(log_inline(ddb, messages, SMALL_ONLY, ms, 2, seed=100 + i,
                                               ordering_key="k" if i % 2 else ""))

    report = compact.compact(spark, bucket, min_age_seconds=60, messages_table=messages, resources_table=resources)
    assert report["raw_objects_in"] == 18 and report["messages"] == 42
    assert report["raw_objects_deleted"] == 6  # the stored requests' objects; log items expire by their ttl
    assert not [k for k in list_keys(s3, bucket) if k.startswith("raw/")]
    for topic, bodies in expected.items():
        seen, archived = archive_view(s3, bucket, topic)
        assert set(seen.values()) == {1} and archived == bodies

    again = compact.compact(spark, bucket, min_age_seconds=60, messages_table=messages, resources_table=resources)
    assert again["hours"] == 0 and again["raw_objects_in"] == 0


def test_without_the_messages_table_compaction_sees_raw_objects_only(
        spark: Any, s3: Any, bucket: str, ddb: Any, tables: tuple[str, str]) -> None:
    messages, _ = tables
    base = base_ms(3)
    log_inline(ddb, messages, MIXED, base, 3, seed=1)
    stored = log_stored(s3, bucket, ddb, messages, MIXED, base + 1, 2)
    report = compact.compact(spark, bucket, min_age_seconds=60)
    assert report["raw_objects_in"] == 1 and report["messages"] == 2
    assert archive_view(s3, bucket, MIXED)[1] == stored


def test_replay_sends_inline_logged_requests_before_and_after_compaction(
        spark: Any, s3: Any, bucket: str, ddb: Any, tables: tuple[str, str], moto_endpoint: str) -> None:
    import boto3

    messages, _ = tables
    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    base = base_ms(4)
    archived = log_inline(ddb, messages, MIXED, base, 3, seed=1) | log_stored(s3, bucket, ddb, messages, MIXED,
                                                                             base + 1, 2)
    compact.compact(spark, bucket, min_age_seconds=0, messages_table=messages, topics=[MIXED])
    recent = log_inline(ddb, messages, MIXED, base + 60_000, 2, seed=2)
    q = sqs.create_queue(QueueName=f"inline-{bucket}")["QueueUrl"]
    start = datetime.fromtimestamp(base / 1000, tz=timezone.utc)
    end = datetime.fromtimestamp((base + HOUR_MS) / 1000, tz=timezone.utc)
    r = replay.replay(spark, bucket, MIXED, start, end, q, messages_table=messages)
    assert r["raw_objects"] == 1 and r["archive_files"] == 1 and r["sent"] == 7
    sent = drain(sqs, q)
    assert {e.message_id: e.data for e in sent} == archived | recent


def test_the_search_starts_at_the_newest_archived_hour_or_an_older_one_still_pending() -> None:
    now = base_ms(0)
    manifest = (layout.manifest_key(MIXED, layout.hour_of_ms(now - 3 * HOUR_MS)), 10)
    pending = (payload.raw_key(MIXED, f"{now - 5 * HOUR_MS:013d}000001", iso(now - 5 * HOUR_MS)), 10)
    assert log_items.search_start_ms([], [manifest], now, 48) == now - 3 * HOUR_MS
    assert log_items.search_start_ms([pending], [manifest], now, 48) == now - 5 * HOUR_MS
    assert log_items.search_start_ms([pending], [], now, 48) == now - 48 * HOUR_MS  # never archived: everything
    assert log_items.search_start_ms([], [manifest], now, 2) == now - 2 * HOUR_MS


def test_a_manifest_names_inline_requests_by_their_keys(s3: Any, bucket: str, ddb: Any,
                                                        tables: tuple[str, str]) -> None:
    messages, _ = tables
    base = base_ms(2)
    log_inline(ddb, messages, MIXED, base, 1, seed=3)
    log_inline(ddb, messages, MIXED, base + 1, 1, seed=4, ordering_key="k")  # in the topic's own partition
    keys = log_items.log_keys(ddb, messages, MIXED, base, base + HOUR_MS)
    assert len(keys) == 2 and all(layout.is_inline_key(k) for k, _ in keys)
    got = list(log_items.read_inline(ddb, messages, [k for k, _ in keys]))
    assert all(blob is not None and json.loads(blob.split(b"\n", 1)[0])["topic"] == MIXED for _, blob in got)
    never = payload.raw_key(MIXED, f"{base:013d}999999", iso(base), inline=True)
    assert list(log_items.read_inline(ddb, messages, [never])) == [(never, None)]  # expired, say
