"""bench/versus.py's figures: the metrics compared, their medians over runs, Metro's advantage (> 1 = Metro
better, whichever way the metric points), the targets, and the table printed."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from rich.table import Table


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool


METRICS = (
    Metric("publish_msgs_s", "publish, 1 KiB x 100 per request", "msg/s", True),
    Metric("pull_ack_msgs_s", "pull + ack (drain, maxMessages=100)", "msg/s", True),
    Metric("latency_p50_ms", "paced publish-to-pull latency p50", "ms", False),
    Metric("latency_p99_ms", "paced publish-to-pull latency p99", "ms", False),
    Metric("create_delete_ms", "create + delete topic", "ms/pair", False),
    Metric("rss_mib", "server RSS after the run", "MiB", False),
    Metric("startup_s", "startup (process start to port answering)", "s", False),
)


# -- pure logic: medians, ratios, targets -------------------------------------------------------------------------


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    """The median of ``key`` over the runs that have it; None when none has."""
    values = [float(r[key]) for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def advantage(metro: float | None, emulator: float | None, higher_is_better: bool) -> float | None:
    """> 1 when Metro is better: Metro/emulator for a rate, emulator/Metro for a time or a size."""
    if metro is None or emulator is None:
        return None
    num, den = (metro, emulator) if higher_is_better else (emulator, metro)
    return round(num / den, 3) if den > 0 else None


def summarize(metro_runs: list[dict[str, Any]], emulator_runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per metric: both medians and Metro's advantage."""
    rows = []
    for m in METRICS:
        mine, theirs = median_of(metro_runs, m.key), median_of(emulator_runs, m.key)
        rows.append({"key": m.key, "label": m.label, "unit": m.unit, "metro": mine, "emulator": theirs,
                     "metro_advantage": advantage(mine, theirs, m.higher_is_better)})
    return rows


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets, met (True), missed (False) or not measured (None)."""
    by = {r["key"]: r for r in rows}

    def at_least(key: str, floor: float) -> bool | None:
        adv = by[key]["metro_advantage"]
        return None if adv is None else adv >= floor

    p50 = by["latency_p50_ms"]["metro"]
    return [
        {"target": "publish throughput >= 0.5x the emulator's", "met": at_least("publish_msgs_s", 0.5),
         "value": by["publish_msgs_s"]["metro_advantage"]},
        {"target": "pull + ack throughput >= 0.5x the emulator's", "met": at_least("pull_ack_msgs_s", 0.5),
         "value": by["pull_ack_msgs_s"]["metro_advantage"]},
        {"target": "paced p50 < 20 ms on Metro", "met": None if p50 is None else p50 < 20, "value": p50},
        {"target": "create + delete no worse than 11x slower (advantage >= 1/11)",
         "met": at_least("create_delete_ms", 1 / 11), "value": by["create_delete_ms"]["metro_advantage"]},
    ]


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"


def table(doc: dict[str, Any]) -> Table:
    t = Table(title=f"Metro vs Google's Pub/Sub emulator, same REST driver, median of {doc['runs']} runs "
                    f"({doc['cpus']} cores); advantage > 1 = Metro better")
    for col in ("measure", "unit", "Metro", "emulator", "Metro advantage"):
        t.add_column(col, justify="left" if col in ("measure", "unit") else "right")
    for r in doc["rows"]:
        adv = r["metro_advantage"]
        t.add_row(r["label"], r["unit"], fmt(r["metro"]), fmt(r["emulator"]), "-" if adv is None else f"{adv:.2f}x")
    dup = doc["duplicates"]
    t.add_row("duplicate deliveries while draining", "msgs", *("-" if d is None else str(d) for d in
                                                               (dup["metro"], dup["emulator"])), "")
    return t


def target_lines(doc: dict[str, Any]) -> list[str]:
    out = [f"{'met' if t['met'] else 'not measured' if t['met'] is None else 'MISSED'}: {t['target']} "
           f"({t['value']})" for t in doc["targets"]]
    if doc.get("emulator_skipped"):
        out.append(f"emulator side skipped: {doc['emulator_skipped']}")
    return out


# -- the driver --------------------------------------------------------------------------------------------------
