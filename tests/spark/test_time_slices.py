"""A big topic hour is merged and written in publish-time slices, each by its own task."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pyarrow as pa
import pytest

from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store
from spark_emr import compact, plan, records
from tests.spark.helpers import archive_view, list_keys, publish

TOPIC = "projects/proj/topics/big"
HOUR_MS = 3_600_000
BASE_MS = 1_780_000_000_000 - 1_780_000_000_000 % HOUR_MS
NOW = BASE_MS / 1000 + 3 * 3600


def test_time_slices_cut_an_hour_by_publish_time() -> None:
    minutes = [0, 1, 29, 30, 59]
    table = pa.table({"publish_time": pa.array([(BASE_MS + m * 60_000) * 1000 for m in minutes],
                                               pa.timestamp("us", tz="UTC")), "m": minutes})
    cut = records.time_slices(table, BASE_MS, 2)
    assert [(s, t.column("m").to_pylist()) for s, t in cut] == [(0, [0, 1, 29]), (1, [30, 59])]
    assert [s for s, _ in records.time_slices(table, BASE_MS, 60)] == minutes
    assert records.time_slices(table, BASE_MS, 1)[0][1] is table
    p = plan.HourPlan(TOPIC, layout.hour_of_ms(BASE_MS), None, ["k"], [], [])
    hid = plan.hour_id(p.topic, p.hour)
    assert plan.hour_time_slices([p], {hid: 10}, 3) == {hid: 4}
    assert plan.hour_time_slices([p], {hid: 10**12}, 1) == {hid: plan.MAX_TIME_SLICES}


@pytest.mark.spark
def test_a_big_hour_written_in_slices_keeps_every_message_once(spark: Any, s3: Any, bucket: str) -> None:
    rng = random.Random(21)
    expected: dict[str, bytes] = {}
    for i in range(24):  # one raw object every 2.5 minutes
        expected.update(publish(s3, bucket, TOPIC, BASE_MS + i * 150_000, 5, size=200, rng=rng)[1])
    raw_bytes = sum(s3.head_object(Bucket=bucket, Key=k)["ContentLength"] for k in list_keys(s3, bucket, "raw/"))

    report = compact.compact(spark, bucket, min_age_seconds=0, now=NOW, direct_bytes=0, slice_bytes=raw_bytes // 4)
    assert report["shuffle_hours"] == 1 and report["shuffle_slices"] in (4, 5)
    assert report["messages"] == len(expected) and report["raw_objects_deleted"] == 24
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1} and bodies == expected

    manifest = store.read_manifest(s3, bucket, TOPIC, layout.hour_of_ms(BASE_MS))
    assert manifest is not None and len(manifest.files) == report["shuffle_slices"]
    numbers = sorted(int(f.key.rsplit("-", 1)[1].split(".")[0]) for f in manifest.files)
    assert numbers == [s * records.SLICE_STRIDE for s in range(len(numbers))]  # one part per slice here
    ranges = sorted((f.first_id, f.last_id) for f in manifest.files)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))  # slices do not overlap
    found = store.read_archived_bodies(s3, bucket, TOPIC, sorted(expected)[::7])
    assert {m: d for m, (d, _, _) in found.items()} == {m: expected[m] for m in sorted(expected)[::7]}


@pytest.mark.spark
def test_a_selection_is_compacted_in_rounds_of_a_few_topics(spark: Any, s3: Any, bucket: str) -> None:
    rng = random.Random(5)
    topics = [f"projects/proj/topics/round-{i}" for i in range(3)]
    expected: dict[str, dict[str, bytes]] = {t: {} for t in topics}
    for t in topics:
        for i in range(4):
            expected[t].update(publish(s3, bucket, t, BASE_MS + i * 60_000, 3, rng=rng)[1])
    phases: list[str] = []

    report = compact.compact(spark, bucket, min_age_seconds=0, now=NOW, threads=1, round_keys=1,
                             on_phase=phases.append)
    assert report["rounds"] == 3 and phases == ["planned", "written", "committed"] * 3
    assert report["hours"] == 3 and report["manifests_out"] == 3 and report["raw_objects_deleted"] == 12
    assert report["messages"] == 36 and report["job"] == "compact"
    for t in topics:
        seen, bodies = archive_view(s3, bucket, t)
        assert set(seen.values()) == {1} and bodies == expected[t]
    again = compact.compact(spark, bucket, min_age_seconds=0, now=NOW, threads=1, round_keys=1)
    assert again["rounds"] == 3 and again["hours"] == 0 and again["raw_objects_deleted"] == 0
