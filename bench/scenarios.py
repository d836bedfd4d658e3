"""Running one scenario (Metro or a baseline) and turning what it measured into figures."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import baselines, crossover, grpc_bench, metro, schema_bench
from bench.pricing import (
    MODEL_CALL_MS,
    CostReport,
    Invocations,
    billable,
    cost,
    google_billed_bytes,
    google_cost,
    lambda_cost,
    subtract,
)
from bench.stack import AUTH_PART, BenchStack, window
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
    push: bool = False  # Metro: push subscriptions delivering to a local webhook (bench/push.py)
    ordering_keys: int = 0  # Metro: > 0: enableMessageOrdering, messages spread over this many keys
    exactly_once: bool = False  # Metro: enableExactlyOnceDelivery
    auth_keys: bool = False  # Metro: served with METRO_AUTH=keys; publisher and consumer users on the ACLs
    consumers: int = 0  # consumer threads per subscription (0: the settings'); a push "consumer" drains a webhook
    schema: bool = False  # Metro: the topic has an Avro schema (JSON encoding) that every publish is checked against
    streaming: bool = False  # Metro: consumed by google-cloud-pubsub's subscribe() (gRPC StreamingPull), not pull

    def subscription_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if self.ordering_keys:
            fields["enableMessageOrdering"] = True
        if self.exactly_once:
            fields["enableExactlyOnceDelivery"] = True
        return fields


ORDERING_KEYS = 8


def plan(quick: bool, scale: float = 1.0) -> list[Scenario]:
    """Baselines run right before the Metro scenario they are compared with; A's variants are compared with A."""
    n_small, n_fan, n_large, n_variant = (int(n * scale) for n in ((300, 200, 100, 200) if quick
                                                                    else (10_000, 10_000, 2_000, 3_000)))
    sqs_batch = baselines.per_request(64 * KIB)
    return [
        Scenario("sqs-1k", "sqs", "raw SQS, 1 KiB", n_small, KIB, 1, per_request=10),
        Scenario("A", "metro", "1 KiB, 1 subscription", n_small, KIB, 1, compare_to="sqs-1k"),
        # right after A, on the same emulator state: what tokens and ACLs cost on the data path
        Scenario("A-keys", "metro", "A, METRO_AUTH=keys (users, ACLs)", n_variant, KIB, 1, compare_to="A",
                 auth_keys=True),
        # A's load, consumed by subscribe() over gRPC (StreamingPull) on the same stack: against A's REST pull
        Scenario("A-stream", "metro", "A, subscribe() over gRPC (StreamingPull)", n_small, KIB, 1, compare_to="A",
                 streaming=True, consumers=1),
        Scenario("sns-1k", "sns", "SNS -> 3 SQS, 1 KiB", n_fan, KIB, 3, per_request=10),
        Scenario("B", "metro", "1 KiB, 3 subscriptions", n_fan, KIB, 3, compare_to="sns-1k"),
        Scenario("sqs-64k", "sqs", "raw SQS, 64 KiB", n_large, 64 * KIB, 1, per_request=sqs_batch),
        Scenario("C", "metro", "64 KiB, 1 subscription", n_large, 64 * KIB, 1, compare_to="sqs-64k"),
        Scenario("A-order", "metro", f"A, ordered ({ORDERING_KEYS} keys, FIFO)", n_variant, KIB, 1, compare_to="A",
                 ordering_keys=ORDERING_KEYS),
        Scenario("A-exact", "metro", "A, exactly-once", n_variant, KIB, 1, compare_to="A", exactly_once=True),
        Scenario("A-push", "metro", "A, push to a local webhook", n_variant, KIB, 1, compare_to="A", push=True,
                 consumers=1),
        Scenario("A-schema", "metro", "A, Avro schema checked (JSON)", n_variant, KIB, 1, compare_to="A",
                 schema=True),
        # small publish requests: each pays the front door, a Lambda invocation and the log's writes alone
        Scenario("A-10", "metro", "1 KiB, publish requests of 10", n_small // 10, KIB, 1, compare_to="sqs-1k",
                 per_request=10),
        Scenario("sqs-1k-1", "sqs", "raw SQS, 1 KiB, one message per send", n_small // 50, KIB, 1, per_request=1),
        Scenario("A-1", "metro", "1 KiB, publish requests of 1", n_small // 50, KIB, 1, compare_to="sqs-1k-1",
                 per_request=1),
        # A's workload at larger messages: where Metro's bill drops below Google's (bench/crossover.py)
        *(Scenario(crossover.key(kib), "metro", f"A at {kib} KiB (crossover)", n_small if quick else n_variant,
                   kib * KIB, 1) for kib in crossover.sizes_kib(quick)),
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


def _system(stack: BenchStack, sc: Scenario, st: Settings, admin_key: str = "") -> System:
    """Create the scenario's resources; return its subscriptions and per-thread client factories.

    With ``admin_key`` (keys mode) the resources are made in a project of their own, with a publisher and a
    consumer user on their ACLs; the data path then runs with those users' tokens, never the admin's (which
    would skip the token's user and the ACL reads)."""
    run = next(_ids)
    subs = [f"{sc.key.lower()}-{run}-s{i}" for i in range(sc.subscriptions)]
    if sc.system == "metro" and admin_key:
        topic = project = f"{sc.key.lower()}-{run}"
        metro.MetroClient(stack.url, admin_key, project).create(topic, subs, extra=lambda sub:
                                                                sc.subscription_fields())
        tokens = metro.grant(stack.url, admin_key, project, topic, subs, prefix=topic)
        publish = metro.publisher(stack.url, topic, metro.payloads(sc.size), sc.size, sc.ordering_keys,
                                  token=tokens.publisher, project=project)
        return subs, publish, metro.consumer(stack.url, sc.size, sc.max_messages, st.pull_wait + 60,
                                             token=tokens.consumer, project=project)
    if sc.system == "metro":
        topic = f"{sc.key.lower()}-{run}"
        client, bodies = metro.MetroClient(stack.url), metro.payloads(sc.size)
        if sc.schema:
            bodies = schema_bench.scenario_payloads(sc.size)
            client.schema(topic, schema_bench.AVRO)
        publish = metro.publisher(stack.url, topic, bodies, sc.size, sc.ordering_keys)
        if sc.push:
            hook = stack.webhook()
            client.create(topic, subs, extra=lambda sub: {**sc.subscription_fields(),
                                                          "pushConfig": {"pushEndpoint": hook.url(sub)}})
            for sub in subs:  # the push pump picks up new push subscriptions within a second
                if not stack.wait_for_push(sub):
                    raise RuntimeError(f"the push pump did not pick up {sub}")
            return subs, publish, hook.consumer(sc.size)
        client.create(topic, subs, extra=lambda sub: sc.subscription_fields())
        if sc.streaming:
            return subs, publish, grpc_bench.StreamingConsumer(stack.url.removeprefix("http://"), sc.size)
        return subs, publish, metro.consumer(stack.url, sc.size, sc.max_messages, st.pull_wait + 60)
    with aws.part("baseline-setup"):
        urls = {s: baselines.sqs_queue(stack, f"bench-{s}") for s in subs}
        if sc.system == "sqs":
            publish = baselines.sqs_publisher(stack, urls[subs[0]], sc.size)
        else:
            arn = baselines.sns_topic(stack, f"bench-{sc.key}-{run}", list(urls.values()))
            publish = baselines.sns_publisher(stack, arn, sc.size)
    return subs, publish, baselines.sqs_consumer(stack, urls, sc.size, st.pull_wait)


def warm_up(stack: BenchStack, push: bool = False, streaming: bool = False) -> None:
    """One small round trip first: lazy imports and cold caches are not part of any scenario."""
    warm = [Scenario("warm", "metro", "warm-up", 20, KIB, 1, per_request=10)]
    if push:
        warm.append(Scenario("warm-push", "metro", "warm-up", 20, KIB, 1, per_request=10, push=True))
    if streaming:
        warm.append(Scenario("warm-stream", "metro", "warm-up", 20, KIB, 1, per_request=10, streaming=True))
    for sc in warm:
        subs, pub, con = _system(stack, sc, Settings(1, 1, 0, 1, 60))
        Engine(Load(sc.messages, sc.per_request, subs, 1, 1, 0, 60), pub, con).run()
        _retire(stack, sc, subs, con)


def _retire(stack: BenchStack, sc: Scenario, subs: list[str], con: ConsumeFactory | None = None) -> None:
    """Close a streaming scenario's streams; delete a push scenario's subscriptions, so their pollers stop
    receiving during later scenarios."""
    if isinstance(con, grpc_bench.StreamingConsumer):
        con.close()
    if sc.system == "metro" and sc.push:
        client = metro.MetroClient(stack.url)
        for sub in subs:
            client.call("DELETE", f"projects/{metro.PROJECT}/subscriptions/{sub}")


def run(stack: BenchStack, sc: Scenario, st: Settings, on_progress: Callable[[int], None]) -> dict[str, Any]:
    """The throughput phase (counted and priced), then a paced latency probe on the same subscriptions."""
    with stack.keys_mode() if sc.auth_keys else contextlib.nullcontext("") as admin_key:
        subs, pub, con = _system(stack, sc, st, admin_key)
        try:
            return _measure(stack, sc, st, subs, pub, con, on_progress)
        finally:
            _retire(stack, sc, subs, con)


def _measure(stack: BenchStack, sc: Scenario, st: Settings, subs: list[str], pub: PublishFactory,
             con: ConsumeFactory, on_progress: Callable[[int], None]) -> dict[str, Any]:
    consumers = sc.consumers or st.consumers
    load = Load(sc.messages, sc.per_request, subs, st.publishers, consumers, max(st.window, sc.per_request),
                st.timeout)
    before = (stack.counter.snapshot(), stack.stats.snapshot(), stack.stats.marks())
    after: list[Any] = []
    out = Engine(load, pub, con).run(
        on_progress, at_done=lambda: after.append((stack.counter.snapshot(), stack.stats.snapshot(),
                                                   stack.stats.marks())))
    counts = subtract(after[0][0], before[0])
    api, events, records = window(before[1], after[0][1])
    api_ms = stack.stats.api_ms_between(before[2], after[0][2])
    auth_ms = stack.stats.api_ms_between(before[2], after[0][2], auth=True)
    if sc.system != "metro":
        api, events, api_ms, auth_ms = {}, {}, {}, {}
    if not sc.push:  # idle push pollers (of no subscription of this run) are not this scenario's cost
        counts = {k: t for k, t in counts.items() if not k[0].startswith("push")}
        events.pop("push", None)
    result = figures(sc, out, cost(counts, api, events), api, events, records, api_ms, auth_ms)
    if out.complete and st.probe_requests and (st.probe_only is None or sc.key in st.probe_only):
        # a quarter of the measured throughput, so each request finds the pipeline idle; at most ~60 s
        interval = max(0.02, sc.per_request / (st.probe_load * sc.messages / out.elapsed))
        requests = max(1, min(st.probe_requests, int(st.probe_seconds / interval)))
        probe = Load(sc.per_request * requests, sc.per_request, subs, 1, consumers, 0, st.timeout,
                     interval=interval)
        p = Engine(probe, pub, con).run()
        ms = [x * 1000 for x in p.latencies]
        result["probe"] = {"complete": p.complete, "interval_s": round(interval, 3),
                           "messages_s": round(sc.per_request / interval, 1), "requests": requests,
                           "latency_ms": _latency(ms), "duplicates": p.duplicates, "errors": p.errors}
        # the same, one message per publish request: the latency a trickle of single messages sees
        singles = max(1, min(st.probe_requests, int(st.probe_seconds / SINGLE_INTERVAL)))
        p1 = Engine(Load(singles, 1, subs, 1, consumers, 0, st.timeout, interval=SINGLE_INTERVAL), pub, con).run()
        result["probe_single"] = {"complete": p1.complete, "interval_s": SINGLE_INTERVAL, "requests": singles,
                                  "latency_ms": _latency([x * 1000 for x in p1.latencies]),
                                  "duplicates": p1.duplicates, "errors": p1.errors}
    return result


SINGLE_INTERVAL = 0.25  # seconds between the single-message probe's publishes


def _latency(ms: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(ms, 50), 1), "p95": round(percentile(ms, 95), 1),
            "p99": round(percentile(ms, 99), 1), "max": round(max(ms, default=0.0), 1), "samples": len(ms)}


def _handler_ms(ms: list[float]) -> dict[str, float]:
    """Distribution of API handler times, to 0.01 ms (differences of well under 1 ms are compared)."""
    return {"p50": round(percentile(ms, 50), 2), "p95": round(percentile(ms, 95), 2),
            "p99": round(percentile(ms, 99), 2), "samples": len(ms)}


def _auth_cost(rep: CostReport, messages: int, auth_ms: dict[str, list[float]]) -> dict[str, float]:
    """What the token and ACL check adds per million messages: its AWS requests (part ``api-auth``: reads on
    cache misses) and the Lambda time it takes, on the duration model (the measured time, its calls' emulator
    time replaced by MODEL_CALL_MS), as the handlers are priced."""
    rows = [r for r in rep.by_operation if r["part"] == AUTH_PART]
    requests_usd = sum(r["usd"] for r in rows)
    local_calls_ms = sum(r["ms_per_call"] * r["calls"] for r in rows)
    model_calls_ms = sum(MODEL_CALL_MS.get(r["service"], 10.0) * r["calls"] for r in rows)
    check_ms = max(0.0, sum(sum(ms) for ms in auth_ms.values()) - local_calls_ms) + model_calls_ms
    lambda_usd = lambda_cost(Invocations(), check_ms)["lambda_gb_s"]
    per_m = 1e6 / messages if messages else 0.0
    return {"aws_requests_per_message": round(sum(r["calls"] for r in rows) / messages, 5) if messages else 0.0,
            "requests_usd_per_million": round(requests_usd * per_m, 5),
            "lambda_usd_per_million": round(lambda_usd * per_m, 5),
            "usd_per_million": round((requests_usd + lambda_usd) * per_m, 5)}


def _billed_calls(rep: CostReport, messages: int, parts: Callable[[str], bool]) -> float:
    calls = sum(r["calls"] for r in rep.by_operation
                if r["operation"] != "invoke" and parts(r["part"]) and billable(r["part"], r["service"]))
    return round(calls / messages, 3) if messages else 0.0


def _per_1k(value: float, messages: int) -> float:
    return round(value * 1000 / messages, 3) if messages else 0.0


def figures(sc: Scenario, out: Outcome, rep: CostReport, api: dict[str, Invocations],
            events: dict[str, Invocations], records: dict[str, int],
            api_ms: dict[str, list[float]] | None = None,
            auth_ms: dict[str, list[float]] | None = None) -> dict[str, Any]:
    n = sc.messages
    fan, fan_records = events.get("fanout", Invocations()), records.get("fanout", 0)
    push = events.get("push", Invocations())
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
        "compare_to": sc.compare_to,
        "auth_mode": ("keys" if sc.auth_keys else "open") if sc.system == "metro" else None,
        "complete": out.complete, "errors": out.errors,
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
        # each API request's handler time as measured locally (what Lambda bills, emulator latency included)
        "api_handler_ms": {v: _handler_ms(ms) for v, ms in sorted((api_ms or {}).items())},
        # the part of it in the edge's token and ACL check (authenticate + authorize)
        "api_auth_ms": {v: _handler_ms(ms) for v, ms in sorted((auth_ms or {}).items())},
        "auth": _auth_cost(rep, n, auth_ms or {}) if sc.system == "metro" else None,
        "api_model_ms_per_invocation": {r["part"][4:]: round(r["units"]["billed_ms"] / r["calls"], 1)
                                        for r in rep.by_operation if r["operation"] == "invoke"
                                        and r["part"].startswith("api:") and r["calls"]},
        "fanout_invocations_per_1k": _per_1k(fan.count, n),
        "fanout_records_per_invocation": round(fan_records / fan.count, 1) if fan.count else 0.0,
        "fanout_local_ms_per_invocation": round(fan.billed_ms / fan.count, 1) if fan.count else 0.0,
        # AWS requests (not invocations) that AWS would bill, per message: all parts, and push's own
        "aws_requests_per_message": _billed_calls(rep, n, lambda part: True),
        "push": {"invocations_per_1k": _per_1k(push.count, n),
                 "messages_per_invocation": round(records.get("push", 0) / push.count, 1),
                 "local_ms_per_invocation": round(push.billed_ms / push.count, 1),
                 "aws_requests_per_message": _billed_calls(rep, n, lambda part: part.startswith("push"))}
        if push.count else None,
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
