"""Targets, and the rich tables printed at the end of a run."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from bench import crossover, schema_bench

TARGET_A_USD_PER_M = 0.12
TARGET_B_USD_PER_M = 0.25  # 3 subscriptions
TARGET_PREMIUM_USD_PER_M = 0.30  # what exactly-once or ordering adds to A, each
TARGET_SINGLE_USD_PER_M = 3.50  # publish requests of one 1 KiB message
TARGET_A_THROUGHPUT_RATIO = 0.9
TARGET_CROSSOVER_KIB = 4.0  # Metro at most Google's from this message size on
SNS_BASELINE = "sns-1k"
TARGET_A_P50_MS = 100.0
TARGET_C_GOOGLE_FRACTION = 0.25
TARGET_KEYS_USD_PER_M_DELTA = 0.01  # A-keys: what the check adds, at most this many $ per million messages
TARGET_KEYS_P50_MS_DELTA = 1.0  # A-keys: the check's p50 per API request at most this much above A's, per verb
KEYS_VERBS = ("publish", "pull", "acknowledge")  # the data path's routes


def _p50(r: dict[str, Any], field: str, verb: str) -> float | None:
    got = r.get(field, {}).get(verb)
    return None if not got else float(got["p50"])


def keys_deltas(results: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A-keys against A. Whole-run differences ($/M, AWS requests per message, handler p50 by verb) mix in
    what differs between two runs of unequal size on a loaded emulator (pull fullness, moto's latency); the
    check's own share (its AWS requests, labelled ``api-auth``, and its time inside each request) is what
    keys mode adds."""
    a, k = results.get("A"), results.get("A-keys")
    if a is None or k is None:
        return None
    a_auth, k_auth = a.get("auth") or {}, k.get("auth") or {}
    verbs: dict[str, Any] = {}
    for verb in KEYS_VERBS:
        row: dict[str, Any] = {}
        for field, name in (("api_handler_ms", "handler_p50_ms"), ("api_auth_ms", "check_p50_ms")):
            pa, pk = _p50(a, field, verb), _p50(k, field, verb)
            if pa is not None and pk is not None:
                row[name] = {"A": pa, "A-keys": pk, "delta": round(pk - pa, 3)}
        verbs[verb] = row
    return {
        "usd_per_million": round(k["cost"]["usd_per_million"] - a["cost"]["usd_per_million"], 4),
        "aws_requests_per_message": round(k["aws_requests_per_message"] - a["aws_requests_per_message"], 4),
        "check_usd_per_million": round(k_auth.get("usd_per_million", 0.0) - a_auth.get("usd_per_million", 0.0), 5),
        "check_aws_requests_per_message": round(k_auth.get("aws_requests_per_message", 0.0)
                                                - a_auth.get("aws_requests_per_message", 0.0), 5),
        "by_verb": verbs,
        "complete": a["complete"] and k["complete"],
    }


def sns_sqs_one_queue_usd(results: dict[str, dict[str, Any]]) -> float | None:
    """Batched SNS -> SQS priced for one queue, from the SNS baseline of the same run: its SNS publishes per
    message, and its SQS receives and deletes divided by its queues (each queue's are its own), so that it
    compares with A's one subscription."""
    base = results.get(SNS_BASELINE)
    if base is None or not base["complete"]:
        return None
    rows = [r for r in base["requests"] if r["part"] == "baseline"]
    sns = sum(float(r["usd_per_million"]) for r in rows if r["service"] == "sns")
    sqs = sum(float(r["usd_per_million"]) for r in rows if r["service"] == "sqs")
    return round(sns + sqs / int(base["subscriptions"]), 4)


def _row(target: str, value: Any, limit: Any, met: bool) -> dict[str, Any]:
    return {"target": target, "value": value, "limit": limit, "met": bool(met)}


def _usd(r: dict[str, Any]) -> float:
    return float(r["cost"]["usd_per_million"])


def _at_most(target: str, r: dict[str, Any] | None, limit: float) -> list[dict[str, Any]]:
    """A run's $/M against a limit (no row when the run was not made)."""
    if r is None:
        return []
    return [_row(target, _usd(r), limit, r["complete"] and _usd(r) <= limit)]


def _premium(results: dict[str, dict[str, Any]], key: str, what: str) -> list[dict[str, Any]]:
    """What a variant of A adds per million messages."""
    a, v = results.get("A"), results.get(key)
    if a is None or v is None:
        return []
    delta = round(_usd(v) - _usd(a), 4)
    return [_row(f"{key} - A: the {what} premium <= +${TARGET_PREMIUM_USD_PER_M:.2f} per million", delta,
                 TARGET_PREMIUM_USD_PER_M, a["complete"] and v["complete"] and delta <= TARGET_PREMIUM_USD_PER_M)]


def cost_targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's cost targets: A, A against batched SNS+SQS, B, the premiums, single-message publishes, and
    the size from which Metro costs less than Google."""
    a = results.get("A")
    out = _at_most(f"A: AWS cost <= ${TARGET_A_USD_PER_M:.2f} per million messages", a, TARGET_A_USD_PER_M)
    sns = sns_sqs_one_queue_usd(results)
    if a is not None and sns is not None:
        out.append(_row("A: AWS cost <= batched SNS -> SQS's on this run (sns-1k, priced for one queue)", _usd(a),
                        sns, a["complete"] and _usd(a) <= sns))
    out += _at_most(f"B (3 subscriptions): AWS cost <= ${TARGET_B_USD_PER_M:.2f} per million", results.get("B"),
                    TARGET_B_USD_PER_M)
    out += _premium(results, "A-exact", "exactly-once") + _premium(results, "A-order", "ordering")
    out += _at_most(f"A-1 (requests of one 1 KiB message): <= ${TARGET_SINGLE_USD_PER_M:.2f} per million",
                    results.get("A-1"), TARGET_SINGLE_USD_PER_M)
    measured = crossover.points(results)
    if measured:
        size = crossover.crossover_kib(measured)
        largest = measured[-1].size_kib
        out.append(_row(f"crossover: Metro <= Google from this message size on, KiB (measured up to {largest:g})",
                        None if size is None else round(size, 2), TARGET_CROSSOVER_KIB,
                        size is not None and size <= TARGET_CROSSOVER_KIB))
    return out


def targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = cost_targets(results)
    a, c = results.get("A"), results.get("C")
    if a is not None:
        ratio = a.get("ratio_vs_baseline")
        out.append(_row(f"A: throughput >= {TARGET_A_THROUGHPUT_RATIO:.0%} of raw SQS on the same emulator", ratio,
                        TARGET_A_THROUGHPUT_RATIO, ratio is not None and ratio >= TARGET_A_THROUGHPUT_RATIO))
        probe = (a.get("probe") or {}).get("latency_ms", {}).get("p50")
        out.append({"target": "A: p50 publish-to-pull latency < 100 ms (paced probe)", "value": probe,
                    "limit": TARGET_A_P50_MS, "met": probe is not None and probe < TARGET_A_P50_MS})
        single = (a.get("probe_single") or {}).get("latency_ms", {}).get("p50")
        if single is not None:
            out.append({"target": "A: p50 latency of single-message publishes (informational)", "value": single,
                        "limit": TARGET_A_P50_MS, "met": single < TARGET_A_P50_MS})
        out.append({"target": "A: p50 publish-to-pull latency < 100 ms (under load)", "value": a["latency_ms"]["p50"],
                    "limit": TARGET_A_P50_MS, "met": a["complete"] and a["latency_ms"]["p50"] < TARGET_A_P50_MS})
    keys = keys_deltas(results)
    if keys is not None:
        usd = keys["check_usd_per_million"]
        out.append({"target": "A-keys: $/M the token and ACL check adds (reads + its time) < $0.01", "value": usd,
                    "limit": TARGET_KEYS_USD_PER_M_DELTA, "met": keys["complete"]
                    and usd < TARGET_KEYS_USD_PER_M_DELTA})
        deltas = [v["check_p50_ms"]["delta"] for v in keys["by_verb"].values() if "check_p50_ms" in v]
        worst = max(deltas, default=None)
        out.append({"target": "A-keys: check's p50 per API request minus A's < 1 ms (worst verb)",
                    "value": worst, "limit": TARGET_KEYS_P50_MS_DELTA,
                    "met": keys["complete"] and worst is not None and worst < TARGET_KEYS_P50_MS_DELTA})
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
    """What ordering, exactly-once, push and keys cost per message compared with the plain scenario A."""
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


def keys_table(results: dict[str, dict[str, Any]]) -> Table | None:
    """What authentication keys cost: A-keys (METRO_AUTH=keys, publisher and consumer tokens) against A."""
    keys = keys_deltas(results)
    if keys is None:
        return None
    a, k = results["A"], results["A-keys"]
    t = Table(title="Authentication keys: A-keys (METRO_AUTH=keys, users on the ACLs) against A (open); "
              "p50 ms: whole handler (of it, the token and ACL check)")
    for col in ("run", "msg/s", "AWS req/msg", "of it check", "$/M", "of it check",
                *(f"{v} p50 ms" for v in KEYS_VERBS)):
        t.add_column(col, justify="left" if col == "run" else "right")

    def p50(r: dict[str, Any], verb: str) -> str:
        whole, check = _p50(r, "api_handler_ms", verb), _p50(r, "api_auth_ms", verb)
        return f"{_f(whole)} ({_f(check, '{:.3f}')})"

    for r in (a, k):
        auth = r.get("auth") or {}
        t.add_row(f"{r['key']} ({r['auth_mode']})", _f(r["throughput_msgs_s"]),
                  _f(r["aws_requests_per_message"], "{:.3f}"), _f(auth.get("aws_requests_per_message"), "{:.4f}"),
                  _f(r["cost"]["usd_per_million"], "${:.4f}"), _f(auth.get("usd_per_million"), "${:.5f}"),
                  *(p50(r, v) for v in KEYS_VERBS))

    def delta(verb: str) -> str:
        row = keys["by_verb"].get(verb, {})
        whole, check = row.get("handler_p50_ms", {}).get("delta"), row.get("check_p50_ms", {}).get("delta")
        return f"{_f(whole, '{:+.1f}')} ({_f(check, '{:+.3f}')})"

    t.add_row("[b]A-keys - A[/b]", "", _f(keys["aws_requests_per_message"], "{:+.3f}"),
              _f(keys["check_aws_requests_per_message"], "{:+.4f}"), _f(keys["usd_per_million"], "{:+.4f}"),
              _f(keys["check_usd_per_million"], "{:+.5f}"), *(delta(v) for v in KEYS_VERBS))
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
    for extra in (variants_table(results), keys_table(results), push_table(results),
                  schema_bench.validation_table(doc.get("validation"))):
        if extra is not None:
            console.print(extra)
    if detail:
        for r in results.values():
            if r["system"] == "metro":
                console.print(requests_table(r))
    console.print(targets_table(doc["targets"]))
