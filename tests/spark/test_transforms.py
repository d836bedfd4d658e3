"""DataFrame transforms on small in-memory DataFrames (local[2], no S3)."""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

import pytest

from spark_emr import records, transforms

pytestmark = pytest.mark.spark

T = "projects/p/topics/t"


def ts(h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, 22, h, m, s, tzinfo=timezone.utc)


def row(mid: str, pt: datetime, okey: str = "", data: bytes = b"xx", topic: str = T) -> records.Row:
    return (topic, mid, pt, okey, {"a": "1"}, data, "raw/k", mid[:19], 0)


@pytest.fixture()
def stage(spark: Any) -> Any:
    rows = [
        row("0000000000001000000000", ts(4, 59, 59), "a"),
        row("0000000000002000000000", ts(5, 0, 0), "b"),
        row("0000000000003000000000", ts(5, 30), "a", data=b"x" * 10),
        row("0000000000004000000000", ts(6, 0), "", topic="projects/q/topics/u"),
        row("0000000000003000000000", ts(5, 30), "a", data=b"x" * 10),  # a repeat
    ]
    return spark.createDataFrame(rows, records.STAGE_DDL)


def test_with_hour_and_in_range(stage: Any) -> None:
    hours = {r.message_id: r.hour for r in transforms.with_hour(stage).collect()}
    assert {records.as_utc(h) for h in hours.values()} == {ts(4), ts(5), ts(6)}
    kept = transforms.in_range(stage, ts(5), ts(6)).collect()
    assert sorted({r.message_id for r in kept}) == ["0000000000002000000000", "0000000000003000000000"]


def test_dedupe(stage: Any) -> None:
    assert transforms.dedupe(stage).count() == 4


def test_replay_order_keeps_each_ordering_key_in_one_partition_in_order(spark: Any) -> None:
    rows = [row(f"{i:013d}000000000", ts(5, i % 60, i // 60), f"k{i % 3}") for i in range(120, 0, -1)]
    df = spark.createDataFrame(rows, records.STAGE_DDL)
    parts = transforms.replay_order(df, 4).rdd.glom().collect()
    where: dict[str, set[int]] = {}
    for n, part in enumerate(parts):
        last: dict[str, tuple[datetime, str]] = {}
        for r in part:
            where.setdefault(r.ordering_key, set()).add(n)
            key = (r.publish_time, r.message_id)
            assert r.ordering_key not in last or last[r.ordering_key] <= key
            last[r.ordering_key] = key
    assert all(len(v) == 1 for v in where.values())
    assert sum(len(p) for p in parts) == 120


def test_daily_usage_from_hourly_and_stage_rows(spark: Any, stage: Any) -> None:
    hourly = spark.createDataFrame(
        [
            ("p", T, ts(4), 3, 30),
            ("p", T, ts(5), 2, 20),
            ("p", T, datetime(2026, 11, 23, 1, tzinfo=timezone.utc), 1, 1),
            ("q", "projects/q/topics/u", ts(6), 7, 70),
        ],
        transforms.usage_rows_schema(),
    )
    got = [(r.project, r.topic, r.day, r.messages, r.bytes) for r in transforms.daily_usage(hourly).collect()]
    assert got == [
        ("p", T, date(2026, 11, 22), 5, 50),
        ("p", T, date(2026, 11, 23), 1, 1),
        ("q", "projects/q/topics/u", date(2026, 11, 22), 7, 70),
    ]
    usage = transforms.daily_usage(transforms.stage_usage(transforms.dedupe(stage))).collect()
    assert [(r.project, r.messages, r.bytes) for r in usage] == [("p", 3, 14), ("q", 1, 2)]
