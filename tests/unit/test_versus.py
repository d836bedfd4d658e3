"""bench/versus_report.py, the figures of bench/versus.py: medians over runs, Metro's advantage (> 1 = Metro
better, whichever way the measure points), the targets and the printed table. No servers."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from bench import versus_report as versus


def run(**figures: float | None) -> dict[str, Any]:
    base: dict[str, Any] = {m.key: None for m in versus.METRICS}
    return {**base, **figures, "duplicates": 0}


def test_median_of_runs_ignores_missing_figures() -> None:
    runs = [run(publish_msgs_s=1000.0), run(publish_msgs_s=3000.0), run(publish_msgs_s=1200.0), run()]
    assert versus.median_of(runs, "publish_msgs_s") == 1200.0
    assert versus.median_of(runs[:2], "publish_msgs_s") == 2000.0
    assert versus.median_of([run()], "publish_msgs_s") is None
    assert versus.median_of([], "rss_mib") is None


@pytest.mark.parametrize(("metro", "emulator", "higher", "expected"), [
    (2000.0, 8000.0, True, 0.25),  # a rate: Metro/emulator
    (8000.0, 2000.0, True, 4.0),
    (10.0, 30.0, False, 3.0),  # a time: emulator/Metro, Metro three times faster
    (30.0, 10.0, False, 0.333),
    (None, 10.0, False, None),
    (10.0, None, True, None),
    (0.0, 10.0, False, None),  # no division by zero
])
def test_advantage_is_above_one_when_metro_is_better(metro: float | None, emulator: float | None, higher: bool,
                                                     expected: float | None) -> None:
    assert versus.advantage(metro, emulator, higher) == expected


def figures(publish: float, pull: float, p50: float, pair: float) -> dict[str, Any]:
    return run(publish_msgs_s=publish, pull_ack_msgs_s=pull, latency_p50_ms=p50, latency_p99_ms=p50 * 3,
               create_delete_ms=pair, rss_mib=200.0, startup_s=1.5)


def test_summary_rows_take_medians_of_each_side() -> None:
    metro = [figures(1000, 900, 12, 50), figures(1100, 1000, 15, 40), figures(5000, 800, 30, 45)]
    emulator = [figures(4000, 2000, 30, 5), figures(4400, 1800, 20, 4), figures(4200, 1900, 25, 6)]
    rows = {r["key"]: r for r in versus.summarize(metro, emulator)}
    assert [r["key"] for r in versus.summarize(metro, emulator)] == [m.key for m in versus.METRICS]
    assert rows["publish_msgs_s"]["metro"] == 1100.0
    assert rows["publish_msgs_s"]["emulator"] == 4200.0
    assert rows["publish_msgs_s"]["metro_advantage"] == round(1100 / 4200, 3)
    assert rows["latency_p50_ms"]["metro_advantage"] == round(25 / 15, 3)
    assert rows["create_delete_ms"]["metro_advantage"] == round(5 / 45, 3)
    assert rows["rss_mib"]["metro_advantage"] == 1.0


def test_targets_met_and_missed() -> None:
    # publish 0.6x (met), pull 0.4x (missed), p50 15 ms (met), create+delete 9x slower (met)
    met = {t["target"]: t["met"] for t in versus.targets(versus.summarize(
        [figures(600, 400, 15, 90)], [figures(1000, 1000, 30, 10)]))}
    assert list(met.values()) == [True, False, True, True]
    # publish 0.5x exactly (met), p50 20 ms (missed: strictly under), create+delete 12x slower (missed)
    met = {t["target"]: t["met"] for t in versus.targets(versus.summarize(
        [figures(500, 500, 20, 120)], [figures(1000, 1000, 30, 10)]))}
    assert list(met.values()) == [True, True, False, False]


def test_without_the_emulator_only_metros_own_target_is_judged() -> None:
    rows = versus.summarize([figures(600, 400, 15, 90)], [])
    assert all(r["emulator"] is None and r["metro_advantage"] is None for r in rows)
    assert [t["met"] for t in versus.targets(rows)] == [None, None, True, None]


def test_table_prints_both_sides_and_the_skip() -> None:
    rows = versus.summarize([figures(1234, 900, 12, 50)], [figures(4000, 2000, 30, 5)])
    doc = {"runs": 1, "cpus": 2, "rows": rows, "targets": versus.targets(rows),
           "duplicates": {"metro": 3, "emulator": 0}, "emulator_skipped": None}
    console = Console(width=200, record=True)
    console.print(versus.table(doc))
    text = console.export_text()
    assert "1,234" in text and "4,000" in text and "0.31x" in text and "2.50x" in text
    assert "duplicate deliveries" in text
    lines = versus.target_lines({**doc, "emulator_skipped": "gcloud is not installed"})
    assert lines[0].startswith("MISSED: publish") and lines[-1].endswith("gcloud is not installed")
