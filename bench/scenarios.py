"""Running one scenario (Metro or a baseline) and turning what it measured into figures."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import baselines, metro
from bench.pricing import CostReport, Invocations, cost, google_billed_bytes, google_cost, subtract
from bench.stack import BenchStack, window
from bench.workload import ConsumeFactory, Engine, Load, Outcome, PublishFactory, percentile
from chalicelib.store import aws

KIB = 1024
_ids = itertools.count()


@dataclass(frozen=True)
class Scenario:
    key: str
    system: str  # "metro", "sqs" or "sns"
    title: str
    messages: int
    size: int
    subscriptions: int
    per_request: int = 100  # messages per publish request
    max_messages: int = 100  # Metro pull maxMessages
    compare_to: str = ""  # key of the baseline this scenario is compared with


def plan(quick: bool, scale: float = 1.0) -> list[Scenario]:
    """Baselines run right before the Metro scenario they are compared with."""
    n_small, n_fan, n_large = (int(n * scale) for n in ((300, 200, 100) if quick else (10_000, 10_000, 2_000)))
    sqs_batch = baselines.per_request(64 * KIB)
    return [
        Scenario("sqs-1k", "sqs", "raw SQS, 1 KiB", n_small, KIB, 1, per_request=10),
        Scenario("A", "metro", "1 KiB, 1 subscription", n_small, KIB, 1, compare_to="sqs-1k"),
        Scenario("sns-1k", "sns", "SNS -> 3 SQS, 1 KiB", n_fan, KIB, 3, per_request=10),
        Scenario("B", "metro", "1 KiB, 3 subscriptions", n_fan, KIB, 3, compare_to="sns-1k"),
        Scenario("sqs-64k", "sqs", "raw SQS, 64 KiB", n_large, 64 * KIB, 1, per_request=sqs_batch),
        Scenario("C", "metro", "64 KiB, 1 subscription", n_large, 64 * KIB, 1, compare_to="sqs-64k"),
    ]


@dataclass
class Settings:
    publishers: int
    consumers: int  # per subscription
    window: int
    pull_wait: int
    timeout: float
    probe_requests: int = 10  # publish requests of the paced latency probe
    probe_load: float = 0.25  # the probe publishes at this fraction of the measured throughput
    probe_seconds: float = 60.0  # fewer probe requests when they would take longer than this
    probe_only: set[str] | None = None  # runs that get a probe (None: all)


System = tuple[list[str], PublishFactory, ConsumeFactory]


def _system(stack: BenchStack, sc: Scenario, st: Settings) -> System:
    """Create the scenario's resources; return its subscriptions and per-thread client factories."""
    run = next(_ids)
    subs = [f"{sc.key.lower()}-{run}-s{i}" for i in range(sc.subscriptions)]
    if sc.system == "metro":
        topic = f"{sc.key.lower()}-{run}"
        metro.MetroClient(stack.url).create(topic, subs)
        bodies = metro.payloads(sc.size)
        return (subs, metro.publisher(stack.url, topic, bodies, sc.size),
                metro.consumer(stack.url, sc.size, sc.max_messages, st.pull_wait + 60))
    with aws.part("baseline-setup"):
        urls = {s: baselines.sqs_queue(stack, f"bench-{s}") for s in subs}
        if sc.system == "sqs":
            publish = baselines.sqs_publisher(stack, urls[subs[0]], sc.size)
        else:
            arn = baselines.sns_topic(stack, f"bench-{sc.key}-{run}", list(urls.values()))
            publish = baselines.sns_publisher(stack, arn, sc.size)
    return subs, publish, baselines.sqs_consumer(stack, urls, sc.size, st.pull_wait)


def warm_up(stack: BenchStack) -> None:
    """One small round trip first: lazy imports and cold caches are not part of any scenario."""
    sc = Scenario("warm", "metro", "warm-up", 20, KIB, 1, per_request=10)
    subs, pub, con = _system(stack, sc, Settings(1, 1, 0, 1, 60))
    Engine(Load(sc.messages, sc.per_request, subs, 1, 1, 0, 60), pub, con).run()


def run(stack: BenchStack, sc: Scenario, st: Settings, on_progress: Callable[[int], None]) -> dict[str, Any]:
    """The throughput phase (counted and priced), then a paced latency probe on the same subscriptions."""
    subs, pub, con = _system(stack, sc, st)
    load = Load(sc.messages, sc.per_request, subs, st.publishers, st.consumers, max(st.window, sc.per_request),
                st.timeout)
    before = (stack.counter.snapshot(), stack.stats.snapshot())
    after: list[Any] = []
    out = Engine(load, pub, con).run(
        on_progress, at_done=lambda: after.append((stack.counter.snapshot(), stack.stats.snapshot())))
    counts = subtract(after[0][0], before[0])
    api, fan, fan_records = window(before[1], after[0][1])
    if sc.system != "metro":
        api, fan = {}, Invocations()
    result = figures(sc, out, cost(counts, api, fan if fan.count else None), api, fan, fan_records)
    if out.complete and st.probe_requests and (st.probe_only is None or sc.key in st.probe_only):
        # a quarter of the measured throughput, so each request finds the pipeline idle; at most ~60 s
        interval = max(0.02, sc.per_request / (st.probe_load * sc.messages / out.elapsed))
        requests = max(1, min(st.probe_requests, int(st.probe_seconds / interval)))
        probe = Load(sc.per_request * requests, sc.per_request, subs, 1, st.consumers, 0, st.timeout,
                     interval=interval)
        p = Engine(probe, pub, con).run()
        ms = [x * 1000 for x in p.latencies]
        result["probe"] = {"complete": p.complete, "interval_s": round(interval, 3),
                           "messages_s": round(sc.per_request / interval, 1), "requests": requests,
                           "latency_ms": _latency(ms), "duplicates": p.duplicates, "errors": p.errors}
    return result


def _latency(ms: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(ms, 50), 1), "p95": round(percentile(ms, 95), 1),
            "p99": round(percentile(ms, 99), 1), "max": round(max(ms, default=0.0), 1), "samples": len(ms)}


def _per_1k(value: float, messages: int) -> float:
    return round(value * 1000 / messages, 3) if messages else 0.0


def figures(sc: Scenario, out: Outcome, rep: CostReport, api: dict[str, Invocations], fan: Invocations,
            fan_records: int) -> dict[str, Any]:
    n = sc.messages
    lat_ms = [x * 1000 for x in out.latencies]
    per_m = 1e6 / n
    google = google_cost(out.google_publish, out.google_delivery) if sc.system == "metro" else 0.0
    requests = []
    for row in rep.by_operation:
        requests.append({
            "part": row["part"], "service": row["service"], "operation": row["operation"],
            "calls_per_1k": _per_1k(row["calls"], n),
            "attempts_per_1k": _per_1k(row.get("attempts", row["calls"]), n),
            "errors": row.get("errors", 0),
            "ms_per_call": row.get("ms_per_call", round(row["units"].get("local_ms", 0.0) / max(1, row["calls"]), 1)),
            "units_per_1k": {k: _per_1k(v, n) for k, v in row["units"].items()},
            "usd_per_million": round(row["usd"] * per_m, 5),
        })
    return {
        "key": sc.key, "system": sc.system, "title": sc.title, "messages": n, "message_bytes": sc.size,
        "subscriptions": sc.subscriptions, "per_request": sc.per_request, "max_messages": sc.max_messages,
        "compare_to": sc.compare_to, "complete": out.complete, "errors": out.errors,
        "elapsed_s": round(out.elapsed, 3),
        "throughput_msgs_s": round(n / out.elapsed, 1) if out.complete and out.elapsed else 0.0,
        "deliveries_s": round(n * sc.subscriptions / out.elapsed, 1) if out.complete and out.elapsed else 0.0,
        "latency_ms": _latency(lat_ms),
        "published": out.published, "acked": out.acked, "duplicates": out.duplicates, "bad_bodies": out.bad_bodies,
        "pulls": out.pulls, "empty_pulls": out.empty_pulls,
        "messages_per_pull": round(sum(out.acked.values()) / max(1, out.pulls - out.empty_pulls), 1),
        "api_invocations_per_1k": {v: _per_1k(i.count, n) for v, i in sorted(api.items())},
        "api_local_ms_per_invocation": {v: round(i.billed_ms / i.count, 1) for v, i in sorted(api.items())
                                        if i.count},
        "api_model_ms_per_invocation": {r["part"][4:]: round(r["units"]["billed_ms"] / r["calls"], 1)
                                        for r in rep.by_operation if r["operation"] == "invoke"
                                        and r["part"].startswith("api:") and r["calls"]},
        "fanout_invocations_per_1k": _per_1k(fan.count, n),
        "fanout_records_per_invocation": round(fan_records / fan.count, 1) if fan.count else 0.0,
        "fanout_local_ms_per_invocation": round(fan.billed_ms / fan.count, 1) if fan.count else 0.0,
        "requests": requests,
        "quantities_per_1k": {k: _per_1k(v, n) for k, v in rep.requests.items()},
        "cost": {
            "usd_window": round(rep.total, 6),
            "usd_per_million": round(rep.per_million(n), 4),
            "usd_per_million_local_durations": round(rep.total_local_durations * per_m, 4),
            "by_price_per_million": {k: round(v * per_m, 4) for k, v in sorted(rep.by_price.items())},
        },
        "google": {"usd_per_million": round(google * per_m, 4),
                   "billed_bytes_per_message": round((google_billed_bytes(out.google_publish)
                                                      + google_billed_bytes(out.google_delivery)) / n, 1)}
        if sc.system == "metro" else None,
    }
