"""chalicelib.core.replay.archive_layout: key naming, manifests, hours of ids (pure)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from chalicelib.core import payload
from chalicelib.core.replay import archive_layout as layout

TOPIC = "projects/p1/topics/t-1"


def test_hour_of_message_id_uses_first_13_digits() -> None:
    ms = int(datetime(2026, 11, 22, 4, 59, 6, 136000, tzinfo=timezone.utc).timestamp() * 1000)
    mid = f"{ms:013d}123456007"
    assert layout.publish_ms(mid) == ms
    assert layout.hour_of_message_id(mid) == datetime(2026, 11, 22, 4, tzinfo=timezone.utc)
    assert layout.hour_of_message_id(mid[:19]) == datetime(2026, 11, 22, 4, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        layout.publish_ms("abc")


def test_keys_match_the_raw_layout_hour() -> None:
    pt = "2026-11-22T04:59:06.136000Z"
    rid = "1795237146136123456"
    raw = payload.raw_key(TOPIC, rid, pt)
    rk = layout.parse_raw_key(raw)
    assert rk.topic == TOPIC and rk.request_id == rid
    assert rk.hour == datetime(2026, 11, 22, 4, tzinfo=timezone.utc)
    assert layout.raw_hour_prefix(TOPIC, rk.hour) == raw.rsplit("/", 1)[0] + "/"
    assert layout.manifest_key(TOPIC, rk.hour) == "archive/p1/t-1/2026/11/22/04/_manifest.json"
    assert layout.part_key(TOPIC, rk.hour, "abcd", 3) == "archive/p1/t-1/2026/11/22/04/part-abcd-00003.parquet"
    ak = layout.parse_archive_key(layout.part_key(TOPIC, rk.hour, "abcd", 3))
    assert (ak.topic, ak.hour, ak.is_manifest) == (TOPIC, rk.hour, False)
    assert layout.parse_archive_key(layout.manifest_key(TOPIC, rk.hour)).is_manifest
    with pytest.raises(ValueError):
        layout.parse_raw_key("raw/p/t/2026/11/22/x.mpub")
    with pytest.raises(ValueError):
        layout.split_topic("projects/p/subscriptions/s")


def test_input_digest_is_order_insensitive_and_changes_with_the_set() -> None:
    a = layout.input_digest(["raw/a", "raw/b"])
    assert a == layout.input_digest(["raw/b", "raw/a", "raw/a"])
    assert a != layout.input_digest(["raw/a", "raw/b", "raw/c"])
    assert len(a) == 16


def test_manifest_round_trip_and_file_selection() -> None:
    hour = datetime(2026, 11, 22, 4, tzinfo=timezone.utc)
    files = [
        layout.ManifestFile("k0", 10, 1000, 500, "1795237146136000000000", "1795237146999000000009"),
        layout.ManifestFile("k1", 5, 500, 300, "1795237147000000000000", "1795237149000000000004"),
    ]
    m = layout.Manifest(TOPIC, hour, 2, "d1", files, ["raw/b", "raw/a"], created="now")
    back = layout.parse_manifest(layout.serialize_manifest(m))
    assert back.topic == TOPIC and back.hour == hour and back.generation == 2 and back.digest == "d1"
    assert back.files == files and back.raw_keys == ["raw/a", "raw/b"]
    assert back.rows == 15 and back.data_bytes == 1500 and back.size == 800
    assert [f.key for f in back.files_for(["1795237148000000000001"])] == ["k1"]
    assert [f.key for f in back.files_for(["1795237146500000000001", "1795237148000000000001"])] == ["k0", "k1"]
    assert back.files_for(["1795237150000000000000"]) == []
    with pytest.raises(ValueError):
        layout.parse_manifest(b'{"v": 99}')


def test_time_formats() -> None:
    dt = layout.parse_time("2026-11-22T04:59:06.136Z")
    assert layout.format_time(dt) == "2026-11-22T04:59:06.136000Z"
    assert layout.format_hour(dt) == "2026-11-22T04:00:00Z"
    assert layout.parse_time("2026-11-22T05:59:06+01:00") == datetime(2026, 11, 22, 4, 59, 6, tzinfo=timezone.utc)
