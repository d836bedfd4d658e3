"""The log item of a small publish request carries its raw bytes: encoding, decoding and the size threshold."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from chalicelib.config import Config
from chalicelib.core import payload
from chalicelib.core.log_keys import BODY, LOG_SHARDS, log_partitions, log_shard, partition_key
from chalicelib.core.records import LogEntry
from chalicelib.core.replay import archive_layout as layout
from chalicelib.store.log import entry_from_item, entry_item

TOPIC = "projects/p/topics/t"
RID = "1800000000000123456"
PT = "2027-01-15T08:00:00.000000Z"


def messages(*bodies: bytes) -> list[payload.StoredMessage]:
    return [payload.StoredMessage(f"{RID}{i:03d}", b, {"k": "v"}) for i, b in enumerate(bodies)]


def entry(blob: bytes, inline: bool) -> LogEntry:
    return LogEntry(TOPIC, RID, payload.raw_key(TOPIC, RID, PT, inline), 10, 1, len(blob) - 10, PT,
                    1_800_604_800, inline=blob if inline else None)


def item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's size of an item: attribute names plus values (numbers counted generously as strings)."""
    size = 0
    for name, value in item.items():
        (kind, v), = value.items()
        size += len(name.encode()) + (len(v) if kind == "B" else len(str(v).encode()))
    return size


def test_an_inline_entry_round_trips_through_its_item() -> None:
    blob, _ = payload.encode(TOPIC, RID, PT, messages(b"one", b"\x00\xff"))
    logged = entry(blob, inline=True)
    item = entry_item(logged)
    assert item[BODY] == {"B": blob}
    assert entry_from_item(item) == logged
    assert logged.key.endswith(".inline") and layout.is_inline_key(logged.key)


def test_a_stream_record_carries_the_bytes_as_base64() -> None:
    blob, _ = payload.encode(TOPIC, RID, PT, messages(b"x" * 100))
    item = entry_item(entry(blob, inline=True))
    as_lambda_sees_it = {**item, BODY: {"B": base64.b64encode(blob).decode()}}
    assert entry_from_item(as_lambda_sees_it).inline == blob


def test_an_entry_with_an_s3_object_has_no_body() -> None:
    blob, _ = payload.encode(TOPIC, RID, PT, messages(b"one"))
    stored = entry(blob, inline=False)
    item = entry_item(stored)
    assert BODY not in item and not entry_from_item(item).logged_inline
    assert stored.key.endswith(".mpub") and not layout.is_inline_key(stored.key)


def test_the_threshold_counts_the_whole_raw_bytes() -> None:
    msgs = messages(b"a" * 50, b"b" * 50)
    blob, _ = payload.encode(TOPIC, RID, PT, msgs)
    assert payload.fits_log_item(blob, msgs, len(blob), 1024)
    assert not payload.fits_log_item(blob, msgs, len(blob) - 1, 1024)
    assert not payload.fits_log_item(blob, msgs, 0, 1024)  # 0 turns inline logging off


def test_a_body_that_would_not_travel_inline_in_the_queue_keeps_its_object() -> None:
    msgs = messages(b"a" * 50)
    blob, _ = payload.encode(TOPIC, RID, PT, msgs)
    assert payload.fits_log_item(blob, msgs, 8192, 50)
    assert not payload.fits_log_item(blob, msgs, 8192, 49)  # a pointer into S3 needs the object


def test_both_key_forms_parse_to_the_same_request() -> None:
    raw, inline = (layout.parse_raw_key(payload.raw_key(TOPIC, RID, PT, flag)) for flag in (False, True))
    assert raw == inline and raw.request_id == RID and raw.topic == TOPIC
    with pytest.raises(ValueError):
        layout.parse_raw_key(payload.raw_key(TOPIC, RID, PT)[: -len(".mpub")] + ".other")


def test_the_largest_default_item_stays_within_eight_write_units() -> None:
    """A worst case item: the longest topic name, a full-size blob, every optional attribute."""
    long_topic = "projects/" + "p" * 30 + "/topics/" + "t" * 255
    limit = Config().log_inline_max_bytes
    blob = b"x" * limit
    worst = LogEntry(long_topic, RID, payload.raw_key(long_topic, RID, PT, True), 10_000, 1000, limit, PT,
                     1_800_604_800, inline=blob)
    size = item_bytes(entry_item(worst))
    assert size <= 8 * 1024, size


def test_ordered_requests_keep_the_topics_own_partition_and_the_rest_spread() -> None:
    rids = [f"18000000000{i:02d}{i * 7919 % 10**6:06d}" for i in range(40)]
    assert {log_shard(rid, ordered=True) for rid in rids} == {0}
    assert {log_shard(rid, ordered=False) for rid in rids} == set(range(1, LOG_SHARDS + 1))
    assert log_partitions(TOPIC) == [TOPIC] + [f"{TOPIC}#{n}" for n in range(1, LOG_SHARDS + 1)]


def test_an_entry_round_trips_with_its_partition() -> None:
    blob, _ = payload.encode(TOPIC, RID, PT, messages(b"one"))
    sharded = dataclasses.replace(entry(blob, inline=True), shard=3)
    item = entry_item(sharded)
    assert item["topic"] == {"S": f"{TOPIC}#3"} and partition_key(TOPIC, 3) == f"{TOPIC}#3"
    assert entry_from_item(item) == sharded and entry_from_item(item).topic == TOPIC
