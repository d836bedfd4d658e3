"""The model's figures as text: docs/deploy.md's generated blocks (Markdown) and the command's tables."""

from __future__ import annotations

import math
from pathlib import Path

from bench.capacity import ceilings
from bench.capacity import usage as ops
from bench.capacity.profile import DEFAULT, Handlers, Profile
from bench.capacity.quotas import DEFAULT_QUOTAS, Quotas, quota_rows
from bench.capacity.simulate import QUOTA_ORDER, DayResult, HourStats
from bench.pricing import PRICES, PRICES_AS_OF
from chalicelib.core.log_keys import LOG_SHARDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
COMMAND = "`python -m bench.capacity --write-docs`"
BLOCKS = ("capacity-quotas", "capacity-model")


def begin(block: str) -> str:
    return f"<!-- {block}: begin; generated from bench/capacity/ by {COMMAND}, do not edit -->"


def end(block: str) -> str:
    return f"<!-- {block}: end -->"


def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def _messages(n: float) -> str:
    return f"{n / 1e6:,.0f} million messages" if n >= 1e7 else f"{n:,.0f} messages"


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x >= 0.995 else f"${x:.3f}"


# -- Markdown ---------------------------------------------------------------------------------------------------


def quotas_markdown(q: Quotas = DEFAULT_QUOTAS) -> str:
    lines = ["| Quota (AWS default, per account and region) | Figure | Where Metro meets it |", "| --- | --- | --- |"]
    lines += [f"| [{r.quota}]({r.source}) | {r.figure} | {r.where} |" for r in quota_rows(q)]
    return "\n".join(lines)


def _topic_rate(h: Handlers, q: Quotas) -> str:
    """One topic's publish ceilings at 1, 10 and 100 messages of 1 KiB a request, without and with ordering keys."""
    sizes = (1, 10, 100)

    def rates(ordered: bool) -> str:
        msgs = " / ".join(_n(ceilings.topic_messages_s(n, ordered=ordered, h=h, q=q)) for n in sizes)
        reqs = " / ".join(_n(ceilings.topic_publish_requests_s(n, ordered=ordered, h=h, q=q)) for n in sizes)
        return f"{msgs} msg/s ({reqs} requests/s)"

    return (f"{rates(False)} at 1 / 10 / 100 messages of 1 KiB per request; with ordering keys {rates(True)} "
            f"(before the log spread over partitions: 1,000 requests/s, 1,000 / 10,000 / 100,000 msg/s)")


def ceilings_markdown(day: DayResult, h: Handlers | None = None, q: Quotas = DEFAULT_QUOTAS) -> str:
    h = h or Handlers()
    peak = day.peak_hour
    others = peak.peak_concurrency - peak.peak_long_pulls
    wide = [ceilings.wide_topic(s, h=h, q=q) for s in (h.direct_fanout_max_subscriptions,
                                                        h.direct_fanout_max_subscriptions + 1, 100,
                                                        h.fanout_slice_subscriptions + 1, 1_000, 10_000, 100_000)]

    def lane(w: ceilings.WideTopic) -> str:
        rate = f"{w.lane_requests_s:,.2f} requests/s ({w.lane_requests_s * 10:,.1f} msg/s)"
        where = {"publish": "publish sends them", "stream": f"the stream lane: {rate}"}.get(
            w.fanned_by, f"{w.slices:,} slices of {w.slice_ms:.0f} ms handed out by the stream lane at {rate}, "
                         f"{w.executions_per_request_s:,.2f} executions per request/s")
        return f"{w.subscriptions:,} subscriptions: {w.sends_per_request:,} sends, {where}"

    rows = [
        ("Concurrent long pulls", f"under {_n(q.lambda_concurrency)} per account, less everything else running: "
         f"{_n(ceilings.max_long_pulls(others, q))} at the default day's peak ({_n(others)} other executions)",
         f"a pull holds its Lambda for up to METRO_PULL_WAIT_SECONDS ({h.pull_wait_s:.0f} s) when its queue is "
         f"empty; each waiting pull also bills {h.pull_wait_s:.0f} s of Lambda time"),
        ("One topic's publish rate", _topic_rate(h, q),
         f"one messages-table item per request, on one of the topic's {LOG_SHARDS} unordered partition keys "
         f"({_n(q.ddb_partition_wcu)} WCU/s each; requests with ordering keys all on the topic's own); a request "
         f"of up to {h.log_inline_max_bytes:,} raw bytes keeps them in its item (one write unit per KiB: "
         f"{ops.write_units(ops.log_item_bytes(1, 1024, True))} for one 1 KiB message) and writes no S3 object; a "
         f"larger one puts an object under the topic's S3 prefix ({_n(q.s3_put_per_prefix)} PUT/s), which binds "
         f"before the partitions"),
        ("A wide topic's fan-out (requests of 10 x 1 KiB)", "; ".join(lane(w) for w in wide),
         f"ceil(n / 10) SendMessageBatch per subscription, {h.send_threads} at a time; above "
         f"{h.direct_fanout_max_subscriptions} subscriptions the stream fans out, one topic's records in order; "
         f"above {h.fanout_slice_subscriptions} it hands out slices of {h.fanout_slice_subscriptions} (one "
         f"asynchronous invocation each, {h.send_threads} invokes at a time) and subscriptions ordering by key stay "
         f"in the lane. Publish's consistent Query reads every subscription item: "
         f"{ceilings.wide_topic(10_000, h=h, q=q).query_read_units:,.0f} read units a request at 10,000, so one "
         f"partition's {_n(q.ddb_partition_rcu)} RCU/s allows "
         f"{ceilings.wide_topic(10_000, h=h, q=q).query_requests_s:,.1f} requests/s unless DynamoDB splits the "
         f"topic's subscriptions for heat"),
        ("S3 PUT per publish request", f"{_usd(PRICES['s3_put_class'].usd)} per 1,000: 50,000 msg/s costs "
         f"{_usd(ceilings.s3_put_usd_per_month(50_000, 10))} a month in requests of 10, "
         f"{_usd(ceilings.s3_put_usd_per_month(50_000, 100))} in requests of 100",
         f"one PutObject per publish request of more than {h.log_inline_max_bytes:,} raw bytes (requests of 10 x 1 "
         f"KiB included), none below: batch publishes"),
        ("One push subscription", f"{_n(ceilings.push_messages_s(h))} msg/s",
         f"the mapping's MaximumConcurrency ({h.push_max_concurrency}) x batches of {h.push_batch_size}, each an "
         f"invocation of {h.push_endpoint_ms:.0f} ms of webhook plus Metro's calls"),
        ("One pull loop", f"{_n(ceilings.pull_loop_messages_s(h=h))} msg/s",
         f"100-message pulls (10 sequential receives), the acknowledge, {h.client_gap_s * 1000:.0f} ms of client time"),
        ("API Gateway", f"{_n(ceilings.api_messages_s(10, 100, q=q))} msg/s at 10 messages per publish and full "
         f"100-message pulls (one subscription); {_n(ceilings.api_messages_s(10, 10, q=q))} at 10-message pulls",
         f"{_n(q.apigw_rps)} requests/s for publish, pull and acknowledge together"),
    ]
    lines = ["| Limit | Ceiling | Why |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def describe(p: Profile) -> str:
    parts = []
    for c in p.topics:
        s = c.subscriptions
        subs = []
        if s.pull:
            subs.append(f"{s.pull} pull subscription{'s' if s.pull > 1 else ''} x {s.pullers} loop"
                        f"{'s' if s.pullers != 1 else ''} (maxMessages {s.max_messages})")
        if s.push:
            subs.append(f"{s.push} push")
        parts.append(f"{c.name}: {c.count:,} topic{'s' if c.count > 1 else ''}, {c.share:.1%} of the messages, "
                     f"{c.message_bytes:,} B in requests of {c.per_request}, {' + '.join(subs)}")
    return (f"peak {_n(p.peak_messages_s)} msg/s at {p.peak_hour:02.0f}:00 UTC, night {p.trough:.0%} of it; "
            + "; ".join(parts))


def _throttled(h: HourStats) -> str:
    if not h.throttled and not h.failed_publishes:
        return "none"
    return ", ".join(f"{k}: {_n(v)}" for k, v in h.throttled.items())


def hour_rows(day: DayResult) -> list[list[str]]:
    rows = []
    for h in day.hours:
        rows.append([f"{h.hour:02d}", _n(h.messages / 1e6, 1), _n(h.peak_messages_s), _n(h.peak_api_rps),
                     f"{_n(h.peak_concurrency)} ({_n(h.peak_long_pulls)})",
                     f"{h.binding} {h.utilization.get(h.binding, 0.0):.0%}", _throttled(h),
                     _usd(h.usd_per_million)])
    return rows


HOUR_HEADER = ["hour (UTC)", "messages (M)", "peak msg/s", "peak API req/s", "peak Lambda concurrency (pulls)",
               "nearest quota (peak use)", "throttled or delayed", "$ per M messages"]


def summary_lines(day: DayResult) -> list[str]:
    peak = day.peak_hour
    first = day.first_binding
    binds = (f"**{first.quota}** first, at {first.clock} UTC" if first else
             f"none; nearest: **{day.nearest.quota}** at {day.nearest.utilization:.0%} of its quota "
             f"({day.nearest.clock[:5]}-{(int(day.nearest.time_s) // 3600 + 1) % 24:02d}:00 UTC)")
    by_price = day.usage.cost_by_price()
    top = sorted(by_price.items(), key=lambda kv: -kv[1])[:4]
    split = ", ".join(f"{PRICES[k].unit.split(' (')[0]} {_usd(v * 1e6 / day.messages)}" for k, v in top)
    return [
        f"- {_messages(day.messages)} in the day; peak Lambda concurrency "
        f"**{_n(day.peak_concurrency)}** ({peak.hour:02d}:00-{(peak.hour + 1) % 24:02d}:00 UTC, "
        f"{_n(peak.peak_long_pulls)} of them pulls) of "
        f"{_n(DEFAULT_QUOTAS.lambda_concurrency)}",
        f"- limit that binds: {binds}",
        f"- cost: **{_usd(day.usd_per_million)} per million messages**, {_usd(day.usage.cost())} for the day "
        f"({split}; list prices of {PRICES_AS_OF}, bench/pricing.py)",
    ]


def model_markdown(day: DayResult, profile: Profile = DEFAULT) -> str:
    lines = ["Ceilings, from the quotas above and the per-request arithmetic of `bench/capacity/usage.py`:", "",
             ceilings_markdown(day, profile.handlers), "",
             f"A simulated day of the `{profile.name}` profile (`make capacity`; {describe(profile)}; seed "
             f"{profile.seed}, {profile.tick_s:g} s steps):", ""]
    lines += summary_lines(day)
    lines += ["", "| " + " | ".join(HOUR_HEADER) + " |", "|" + " --- |" * len(HOUR_HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in hour_rows(day)]
    return "\n".join(lines)


def blocks(day: DayResult, profile: Profile = DEFAULT) -> dict[str, str]:
    return {"capacity-quotas": quotas_markdown(), "capacity-model": model_markdown(day, profile)}


def _span(text: str, block: str) -> tuple[int, int]:
    b, e = text.find(begin(block)), text.find(end(block))
    if b < 0 or e < b or text.count(begin(block)) != 1 or text.count(end(block)) != 1:
        raise ValueError(f"docs/deploy.md needs one {begin(block)!r} line and one {end(block)!r} line after it")
    return b + len(begin(block)), e


def current(text: str, block: str) -> str:
    b, e = _span(text, block)
    return text[b:e].strip("\n")


def write(text: str, rendered: dict[str, str]) -> str:
    for block, body in rendered.items():
        b, e = _span(text, block)
        text = text[:b] + "\n" + body + "\n" + text[e:]
    return text


# -- the command's tables ---------------------------------------------------------------------------------------


def print_day(day: DayResult, profile: Profile, plain: bool = False) -> None:
    title = f"Metro capacity model: profile {profile.name} ({describe(profile)})"
    header = HOUR_HEADER
    rows = hour_rows(day)
    quota_rows_ = [[name, f"{max(h.utilization.get(name, 0.0) for h in day.hours):.0%}",
                    _n(day.throttled().get(name, 0.0))] for name in QUOTA_ORDER]
    by_service = day.usage.by_service()
    requests = [[k, _n(v / day.messages * 1e6 if day.messages else math.nan)] for k, v in by_service.items()]
    if not plain:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            plain = True
    if plain:
        print(title)
        for table in ([header, *rows], [["quota", "peak use", "throttled or delayed"], *quota_rows_],
                      [["service", "requests per million messages"], *requests]):
            widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
            for r in table:
                print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
            print()
    else:
        console = Console()
        for name, head, body in ((title, header, rows),
                                 ("Quotas over the day", ["quota", "peak use", "throttled or delayed"], quota_rows_),
                                 ("AWS requests", ["service", "requests per million messages"], requests)):
            t = Table(title=name)
            for col in head:
                t.add_column(col)
            for r in body:
                t.add_row(*r)
            console.print(t)
    for line in summary_lines(day):
        print(line.replace("**", ""))
