"""The benchmark table of docs/benchmarks.md, rendered from the recorded run, bench/results.json.

The table sits between two marker comments in the page. ``python -m bench.table`` rewrites what lies between
them (``make bench RECORD=1`` runs it after recording); ``--check`` only compares, and exits 1 when the page and
the recorded figures disagree (tests/unit/test_bench_table.py does the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
DOC = HERE.parent / "docs" / "benchmarks.md"
BEGIN = "<!-- bench-table: begin; generated from bench/results.json by `python -m bench.table`, do not edit -->"
END = "<!-- bench-table: end -->"
HEADER = ("| scenario | msg/s (vs baseline) | p50 latency: 100-message / 1-message publishes "
          "| AWS $ per million messages | Google Pub/Sub, same bytes |\n|---|---|---|---|---|")


def _whole(value: float) -> str:
    """Rounded half up, as a reader rounds (28.5 ms is 29 ms), with thousands separators."""
    return f"{Decimal(str(value)).quantize(Decimal(1), rounding=ROUND_HALF_UP):,}"


def _p50(probe: dict[str, Any] | None) -> str:
    value = ((probe or {}).get("latency_ms") or {}).get("p50")
    return "-" if value is None else _whole(value)


def _label(r: dict[str, Any], variant: bool) -> str:
    """``A: 10,000 x 1 KiB, 1 subscription`` for a scenario, ``A-order: A, ordered (...)`` for a variant of one."""
    return f"{r['key']}: {r['title']}" if variant else f"{r['key']}: {r['messages']:,} x {r['title']}"


def _throughput(r: dict[str, Any], base: dict[str, Any] | None) -> str:
    shown = f"{r['throughput_msgs_s']:,.1f}" + (" delivered" if r.get("push") else "")
    ratio = r.get("ratio_vs_baseline")
    if base is None or ratio is None:
        return shown
    name = base["key"] if base["system"] == "metro" else base["title"].split(",")[0]
    return f"{shown} ({ratio:.0%} of {name})"


def _row(r: dict[str, Any], results: dict[str, dict[str, Any]]) -> str:
    base = results.get(r.get("compare_to") or "")
    variant = base is not None and base["system"] == "metro"
    google = (r.get("google") or {}).get("usd_per_million")
    cells = [
        _label(r, variant),
        _throughput(r, base),
        f"{_p50(r.get('probe'))} / {_p50(r.get('probe_single'))} ms",
        f"${r['cost']['usd_per_million']:.2f}" + ("" if r["complete"] else " (incomplete run)"),
        "" if variant or google is None else f"${google:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def _run_line(doc: dict[str, Any], first: dict[str, Any]) -> str:
    machine, settings = doc["machine"], doc["settings"]
    python = ".".join(str(machine["python"]).split(".")[:2])
    moto = machine.get("packages", {}).get("moto", "?")
    return (f"Run of {doc['date'][:10]} on {machine['cpus']} {machine['cpu']} CPUs (Python {python}, moto {moto}), "
            f"{settings['publishers']} publishers and {settings['consumers_per_subscription']} pullers per "
            f"subscription, {first['per_request']} messages per publish, `maxMessages={first['max_messages']}`"
            + (" (a quick run)" if doc.get("quick") else "") + ":")


def render(doc: dict[str, Any]) -> str:
    """The run's description and one row per Metro scenario, in the order the run made them."""
    results: dict[str, dict[str, Any]] = doc["results"]
    metro = [r for r in results.values() if r["system"] == "metro"]
    if not metro:
        raise ValueError("the results hold no Metro scenario")
    rows = "\n".join(_row(r, results) for r in metro)
    return f"{_run_line(doc, metro[0])}\n\n{HEADER}\n{rows}"


def _bounds(text: str) -> tuple[int, int]:
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin or text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"the page needs one {BEGIN!r} line and one {END!r} line after it")
    return begin + len(BEGIN), end


def current(text: str) -> str:
    """What the page holds between the markers."""
    start, stop = _bounds(text)
    return text[start:stop].strip("\n")


def rewritten(text: str, table: str) -> str:
    start, stop = _bounds(text)
    return f"{text[:start]}\n{table}\n{text[stop:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.table", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when the page is out of date")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    table = render(json.loads(args.results.read_text()))
    text = args.doc.read_text()
    if args.check:
        if current(text) != table:
            print(f"{args.doc} does not match {args.results}: run python -m bench.table", file=sys.stderr)
            return 1
        return 0
    updated = rewritten(text, table)
    if updated != text:
        args.doc.write_text(updated)
        print(f"rewrote the benchmark table of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
