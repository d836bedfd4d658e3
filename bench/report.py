"""Targets, and the rich tables printed at the end of a run."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

TARGET_A_USD_PER_M = 0.40
TARGET_A_THROUGHPUT_RATIO = 0.5
TARGET_A_P50_MS = 100.0
TARGET_C_GOOGLE_FRACTION = 0.25


def targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    a, c = results.get("A"), results.get("C")
    if a is not None:
        out.append({"target": "A: AWS cost <= $0.40 per million messages", "value": a["cost"]["usd_per_million"],
                    "limit": TARGET_A_USD_PER_M, "met": a["complete"]
                    and a["cost"]["usd_per_million"] <= TARGET_A_USD_PER_M})
        ratio = a.get("ratio_vs_baseline")
        out.append({"target": "A: throughput >= 50% of raw SQS", "value": ratio, "limit": TARGET_A_THROUGHPUT_RATIO,
                    "met": ratio is not None and ratio >= TARGET_A_THROUGHPUT_RATIO})
        probe = (a.get("probe") or {}).get("latency_ms", {}).get("p50")
        out.append({"target": "A: p50 publish-to-pull latency < 100 ms (paced probe)", "value": probe,
                    "limit": TARGET_A_P50_MS, "met": probe is not None and probe < TARGET_A_P50_MS})
        single = (a.get("probe_single") or {}).get("latency_ms", {}).get("p50")
        if single is not None:
            out.append({"target": "A: p50 latency of single-message publishes (informational)", "value": single,
                        "limit": TARGET_A_P50_MS, "met": single < TARGET_A_P50_MS})
        out.append({"target": "A: p50 publish-to-pull latency < 100 ms (under load)", "value": a["latency_ms"]["p50"],
                    "limit": TARGET_A_P50_MS, "met": a["complete"] and a["latency_ms"]["p50"] < TARGET_A_P50_MS})
    if c is not None and c.get("google"):
        google = c["google"]["usd_per_million"]
        frac = c["cost"]["usd_per_million"] / google if google else None
        out.append({"target": "C: AWS cost < 1/4 of Google's for the same bytes", "value": frac,
                    "limit": TARGET_C_GOOGLE_FRACTION, "met": c["complete"] and frac is not None
                    and frac < TARGET_C_GOOGLE_FRACTION})
    return out


def _f(value: Any, fmt: str = "{:,.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def summary_table(results: dict[str, dict[str, Any]]) -> Table:
    t = Table(title="Metro benchmark (embedded stack: moto + Chalice local + pump, one process)")
    for col in ("run", "system", "msgs", "msg/s", "vs base", "load p50/p95/p99 ms", "probe p50/p99 ms",
                "msgs/pull", "AWS $/M", "($/M local)", "Google $/M", "AWS/Google"):
        t.add_column(col, justify="right" if col not in ("run", "system") else "left")
    for key, r in results.items():
        google = (r.get("google") or {}).get("usd_per_million")
        usd = r["cost"]["usd_per_million"]
        lat = r["latency_ms"]
        probe = (r.get("probe") or {}).get("latency_ms")
        t.add_row(
            key, f"{r['system']}: {r['title']}", f"{r['messages']:,}" + ("" if r["complete"] else " (incomplete)"),
            _f(r["throughput_msgs_s"]), _f(r.get("ratio_vs_baseline"), "{:.0%}"),
            f"{lat['p50']:,.0f} / {lat['p95']:,.0f} / {lat['p99']:,.0f}",
            f"{probe['p50']:,.0f} / {probe['p99']:,.0f}" if probe else "-",
            _f(None if r.get("push") else r["messages_per_pull"]), _f(usd, "${:.3f}"),
            _f(r["cost"].get("usd_per_million_local_durations"), "${:.3f}"), _f(google, "${:.3f}"),
            _f(usd / google if google else None, "{:.2f}"),
        )
    return t


def requests_table(r: dict[str, Any]) -> Table:
    t = Table(title=f"{r['key']}: AWS requests per 1,000 messages, and $ per million messages")
    for col in ("part", "service", "operation", "calls/1k", "billed units/1k", "local ms/call", "$/M"):
        t.add_column(col, justify="right" if col in ("calls/1k", "local ms/call", "$/M") else "left")
    rows = sorted(r["requests"], key=lambda x: (-x["usd_per_million"], x["part"], x["service"], x["operation"]))
    for row in rows:
        units = ", ".join(f"{k}={v:,.1f}" for k, v in row["units_per_1k"].items()
                          if k in ("wu", "ru", "billed", "billed_fifo", "put_class", "get_class", "billed_ms"))
        t.add_row(row["part"], row["service"], row["operation"], f"{row['calls_per_1k']:,.1f}", units,
                  f"{row['ms_per_call']:,.1f}", f"{row['usd_per_million']:.4f}")
    return t


def cost_table(results: dict[str, dict[str, Any]]) -> Table:
    keys = sorted({k for r in results.values() for k in r["cost"]["by_price_per_million"]})
    t = Table(title="$ per million messages by price line")
    t.add_column("price line")
    for name in results:
        t.add_column(name, justify="right")
    for k in keys:
        t.add_row(k, *[f"{r['cost']['by_price_per_million'].get(k, 0.0):.4f}" for r in results.values()])
    t.add_row("[b]total[/b]", *[f"[b]{r['cost']['usd_per_million']:.4f}[/b]" for r in results.values()])
    return t


def variants_table(results: dict[str, dict[str, Any]]) -> Table | None:
    """What ordering, exactly-once and push cost per message compared with the plain scenario A."""
    base = results.get("A")
    variants = [r for r in results.values() if r.get("compare_to") == "A" and r["system"] == "metro"]
    if base is None or not variants:
        return None
    t = Table(title="A's variants against A (1 KiB, 1 subscription): per 1,000 messages unless noted")
    for col in ("run", "msg/s", "vs A", "AWS req/msg", "API req", "Lambda inv", "DynamoDB WU", "DynamoDB RU",
                "SQS req (FIFO)", "$/M", "$/M vs A"):
        t.add_column(col, justify="left" if col == "run" else "right")
    a_usd = base["cost"]["usd_per_million"]
    for r in [base, *variants]:
        q = r["quantities_per_1k"]
        usd = r["cost"]["usd_per_million"]
        fifo = q.get("sqs_fifo_billed", 0.0)
        t.add_row(
            f"{r['key']}: {r['title']}", _f(r["throughput_msgs_s"]), _f(r.get("ratio_vs_baseline"), "{:.0%}")
            if r is not base else "", _f(r.get("aws_requests_per_message"), "{:.2f}"),
            _f(q.get("apigw_requests")), _f(q.get("lambda_invocations")), _f(q.get("ddb_wu")), _f(q.get("ddb_ru")),
            _f(q.get("sqs_billed", 0.0) + fifo) + (f" ({fifo:,.1f})" if fifo else ""), _f(usd, "${:.3f}"),
            _f(usd - a_usd, "{:+.3f}") if r is not base else "",
        )
    return t


def push_table(results: dict[str, dict[str, Any]]) -> Table | None:
    rows = [r for r in results.values() if r.get("push")]
    if not rows:
        return None
    t = Table(title="Push delivery to a local webhook")
    for col in ("run", "delivered msg/s", "latency p50/p99 ms", "push invocations/1k", "msgs/invocation",
                "push AWS req/msg", "all AWS req/msg", "$/M"):
        t.add_column(col, justify="left" if col == "run" else "right")
    for r in rows:
        p, lat = r["push"], r["latency_ms"]
        t.add_row(r["key"], _f(r["throughput_msgs_s"]), f"{lat['p50']:,.0f} / {lat['p99']:,.0f}",
                  _f(p["invocations_per_1k"]), _f(p["messages_per_invocation"]),
                  _f(p["aws_requests_per_message"], "{:.3f}"), _f(r["aws_requests_per_message"], "{:.3f}"),
                  _f(r["cost"]["usd_per_million"], "${:.3f}"))
    return t


def targets_table(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="Targets")
    for col in ("target", "measured", "limit", "met"):
        t.add_column(col)
    for row in rows:
        value = row["value"]
        shown = "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)
        t.add_row(row["target"], shown, str(row["limit"]), "[green]yes[/green]" if row["met"] else "[red]NO[/red]")
    return t


def print_all(console: Console, doc: dict[str, Any], detail: bool = True) -> None:
    results = doc["results"]
    console.print(summary_table(results))
    console.print(cost_table(results))
    for extra in (variants_table(results), push_table(results)):
        if extra is not None:
            console.print(extra)
    if detail:
        for r in results.values():
            if r["system"] == "metro":
                console.print(requests_table(r))
    console.print(targets_table(doc["targets"]))
