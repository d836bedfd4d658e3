"""The benchmark table of docs/benchmarks.md is generated from bench/results.json (bench/table.py): the page
and the recorded run must agree, and the rendering must say what the run measured."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bench import table


def _recorded() -> dict[str, Any]:
    return json.loads(table.RESULTS.read_text())  # type: ignore[no-any-return]


def test_the_page_holds_the_table_of_the_recorded_run() -> None:
    assert table.current(table.DOC.read_text()) == table.render(_recorded()), (
        "docs/benchmarks.md and bench/results.json disagree: run python -m bench.table")
    assert table.main(["--check"]) == 0


def test_a_row_per_metro_scenario_with_its_figures() -> None:
    doc = _recorded()
    rendered = table.render(doc)
    rows = [line for line in rendered.splitlines() if line.startswith("| ") and not line.startswith("| scenario")]
    metro = [r for r in doc["results"].values() if r["system"] == "metro"]
    assert [row.split(" | ")[0].removeprefix("| ").split(":")[0] for row in rows] == [r["key"] for r in metro]
    a = doc["results"]["A"]
    row_a = rows[0]
    assert f"{a['throughput_msgs_s']:,.1f}" in row_a
    assert f"{a['ratio_vs_baseline']:.0%} of raw SQS" in row_a
    assert f"${a['cost']['usd_per_million']:.2f}" in row_a
    assert f"${a['google']['usd_per_million']:.2f}" in row_a
    assert rendered.startswith(f"Run of {doc['date'][:10]} on {doc['machine']['cpus']} ")


def test_latencies_are_rounded_half_up() -> None:
    doc = copy.deepcopy(_recorded())
    doc["results"]["A"]["probe_single"]["latency_ms"]["p50"] = 28.5
    doc["results"]["A"]["probe"]["latency_ms"]["p50"] = 1004.1
    assert "| 1,004 / 29 ms |" in table.render(doc)


def test_a_changed_figure_is_noticed(tmp_path: Any) -> None:
    doc = copy.deepcopy(_recorded())
    doc["results"]["A"]["cost"]["usd_per_million"] = 9.99
    results = tmp_path / "results.json"
    results.write_text(json.dumps(doc))
    page = tmp_path / "benchmarks.md"
    page.write_text(table.DOC.read_text())
    assert table.main(["--check", "--results", str(results), "--doc", str(page)]) == 1
    assert table.main(["--results", str(results), "--doc", str(page)]) == 0  # rewrites it
    assert "$9.99" in page.read_text()
    assert table.main(["--check", "--results", str(results), "--doc", str(page)]) == 0
    before, after = table.DOC.read_text().split(table.BEGIN)[0], page.read_text().split(table.BEGIN)[0]
    assert before == after  # nothing outside the markers moves


def test_the_markers_are_required() -> None:
    with pytest.raises(ValueError, match="bench-table"):
        table.current("no markers here")
    with pytest.raises(ValueError):
        table.rewritten(f"{table.END}\n{table.BEGIN}", "x")
