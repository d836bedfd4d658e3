"""The benchmark's targets (bench/report.py) and the crossover read off A's workload at several sizes
(bench/crossover.py): each row carries the measured value and its limit, and a missed target says so."""

from __future__ import annotations

from typing import Any

import pytest

from bench import crossover, report


def _run(key: str, usd: float, *, google: float | None = 0.08, size: int = 1024, complete: bool = True,
         ratio: float | None = None) -> dict[str, Any]:
    return {"key": key, "complete": complete, "message_bytes": size, "subscriptions": 1,
            "cost": {"usd_per_million": usd}, "google": None if google is None else {"usd_per_million": google},
            "latency_ms": {"p50": 50.0}, "ratio_vs_baseline": ratio, "requests": []}


def _sns(publish_usd: float, sqs_usd: float) -> dict[str, Any]:
    r = _run("sns-1k", publish_usd + sqs_usd, google=None)
    r["subscriptions"] = 3
    r["requests"] = [
        {"part": "baseline", "service": "sns", "operation": "PublishBatch", "usd_per_million": publish_usd},
        {"part": "baseline", "service": "sqs", "operation": "ReceiveMessage", "usd_per_million": sqs_usd / 2},
        {"part": "baseline", "service": "sqs", "operation": "DeleteMessageBatch", "usd_per_million": sqs_usd / 2},
        {"part": "other", "service": "sqs", "operation": "ReceiveMessage", "usd_per_million": 5.0},
    ]
    return r


def _met(rows: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    [row] = [r for r in rows if r["target"].startswith(prefix)]
    return row


def _results(**usd: float) -> dict[str, dict[str, Any]]:
    runs = {"A": 0.10, "B": 0.20, "A-exact": 0.30, "A-order": 0.35, "A-1": 3.0, **usd}
    out = {k.replace("_", "-"): _run(k.replace("_", "-"), v, ratio=0.95 if k == "A" else None)
           for k, v in runs.items()}
    out["sns-1k"] = _sns(0.05, 0.30)  # one queue: 0.05 + 0.10
    return out


def test_every_cost_target_is_met_by_a_run_within_its_limits() -> None:
    rows = report.targets(_results())
    for prefix in ("A: AWS cost <= $0.12", "A: AWS cost <= batched SNS", "B (3", "A-exact - A", "A-order - A",
                   "A-1 (", "A: throughput"):
        assert _met(rows, prefix)["met"], prefix
    assert _met(rows, "A: AWS cost <= batched SNS")["limit"] == pytest.approx(0.15)
    assert _met(rows, "A-order - A")["value"] == pytest.approx(0.25)


@pytest.mark.parametrize(("runs", "prefix", "value", "limit"), [
    ({"A": 0.13}, "A: AWS cost <= $0.12", 0.13, 0.12),
    ({"A": 0.16}, "A: AWS cost <= batched SNS", 0.16, 0.15),
    ({"B": 0.26}, "B (3", 0.26, 0.25),
    ({"A_exact": 0.41}, "A-exact - A", 0.31, 0.30),
    ({"A_order": 0.41}, "A-order - A", 0.31, 0.30),
    ({"A_1": 3.51}, "A-1 (", 3.51, 3.50),
])
def test_a_missed_target_shows_its_value_its_limit_and_met_false(runs: dict[str, float], prefix: str,
                                                                   value: float, limit: float) -> None:
    row = _met(report.targets(_results(**runs)), prefix)
    assert (row["value"], row["limit"], row["met"]) == (pytest.approx(value), pytest.approx(limit), False)


def test_an_incomplete_run_meets_no_cost_target() -> None:
    results = _results()
    results["B"]["complete"] = False
    assert not _met(report.targets(results), "B (3")["met"]


def test_throughput_below_nine_tenths_of_raw_sqs_is_missed() -> None:
    results = _results()
    results["A"]["ratio_vs_baseline"] = 0.89
    row = _met(report.targets(results), "A: throughput")
    assert (row["value"], row["limit"], row["met"]) == (0.89, 0.9, False)


def _sized(kib: int, metro: float, google: float) -> tuple[str, dict[str, Any]]:
    key = "A" if kib == 1 else crossover.key(kib)
    return key, _run(key, metro, google=google, size=kib * 1024)


def test_the_crossover_is_interpolated_between_the_measured_sizes_around_it() -> None:
    # Metro costs 0.30 more at 1 KiB, 0.10 more at 2 KiB, 0.10 less at 4 KiB, 0.40 less at 8 KiB
    results = dict([_sized(1, 0.38, 0.08), _sized(2, 0.25, 0.15), _sized(4, 0.20, 0.30), _sized(8, 0.20, 0.60)])
    assert crossover.crossover_kib(crossover.points(results)) == pytest.approx(3.0)
    row = _met(report.targets(results), "crossover")
    assert (row["value"], row["limit"], row["met"]) == (3.0, 4.0, True)
    assert crossover.summary(results)["crossover_kib"] == 3.0


def test_a_crossover_above_4_kib_is_missed() -> None:
    results = dict([_sized(1, 0.40, 0.08), _sized(2, 0.40, 0.15), _sized(4, 0.40, 0.30), _sized(8, 0.40, 0.60)])
    row = _met(report.targets(results), "crossover")
    assert row["value"] == pytest.approx(4 + 4 * 0.10 / 0.30, abs=0.01)
    assert not row["met"]


def test_no_crossover_within_the_measured_sizes_is_none_and_missed() -> None:
    results = dict([_sized(1, 0.40, 0.08), _sized(4, 0.40, 0.30)])
    assert crossover.crossover_kib(crossover.points(results)) is None
    row = _met(report.targets(results), "crossover")
    assert (row["value"], row["met"]) == (None, False)


def test_a_size_where_metro_is_dearer_again_moves_the_crossover_above_it() -> None:
    measured = [crossover.Point(1, 0.1, 0.2), crossover.Point(2, 0.3, 0.2), crossover.Point(4, 0.1, 0.3)]
    assert crossover.crossover_kib(measured) == pytest.approx(2 + 2 * 0.1 / 0.3)
    assert crossover.crossover_kib([crossover.Point(1, 0.05, 0.08)]) == 1


def test_incomplete_runs_are_not_points() -> None:
    key, run = _sized(4, 0.1, 0.3)
    run["complete"] = False
    assert crossover.points({key: run}) == []


def test_the_plan_runs_a_s_workload_at_the_crossover_sizes_4_kib_only_when_quick() -> None:
    from bench import scenarios

    a = next(s for s in scenarios.plan(quick=False) if s.key == "A")
    full = {s.key: s for s in scenarios.plan(quick=False) if s.key in {"A-2k", "A-4k", "A-8k"}}
    assert [s.size for s in full.values()] == [2048, 4096, 8192]
    assert all((s.subscriptions, s.per_request, s.max_messages, s.system) == (a.subscriptions, a.per_request,
                                                                              a.max_messages, "metro")
               for s in full.values())
    assert [s.key for s in scenarios.plan(quick=True) if s.key.endswith("k") and s.key.startswith("A-")] == ["A-4k"]
