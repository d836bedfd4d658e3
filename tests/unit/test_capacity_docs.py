"""docs/deploy.md's capacity section is the model's: its generated blocks must be what bench/capacity renders from a
day of the default profile, the prose around them must state the model's figures, and the model's settings must be
the code's (chalicelib's defaults, the deploy's)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from bench.capacity import ceilings, report
from bench.capacity import simulate as sim
from bench.capacity import usage as ops
from bench.capacity.profile import DEFAULT, PROFILES, Handlers
from bench.capacity.quotas import DEFAULT_QUOTAS
from bench.pricing import LAMBDA_MEMORY_GB

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def day() -> sim.DayResult:
    return sim.simulate(DEFAULT)


@pytest.fixture(scope="module")
def doc() -> str:
    return report.DOC.read_text()


def test_the_page_holds_the_blocks_the_model_renders(day: sim.DayResult, doc: str) -> None:
    for block, body in report.blocks(day).items():
        assert report.current(doc, block) == body, (
            f"docs/deploy.md's {block} block and bench/capacity disagree: run python -m bench.capacity --write-docs")


def test_the_default_day_stays_under_every_quota_as_documented(day: sim.DayResult, doc: str) -> None:
    q = DEFAULT_QUOTAS
    assert day.first_binding is None
    assert "limit that binds: none" in doc
    assert all(not h.throttled and not h.failed_publishes for h in day.hours)
    assert 0 < day.peak_concurrency < q.lambda_concurrency
    assert max(h.peak_api_rps for h in day.hours) < q.apigw_rps
    assert max(h.peak_partition_wcu for h in day.hours) < q.ddb_partition_wcu
    assert max(h.peak_table_wcu for h in day.hours) < q.ddb_on_demand_initial_wcu
    assert max(h.peak_prefix_puts for h in day.hours) < q.s3_put_per_prefix
    # the quota nearest its limit, as the page names it
    assert day.nearest.quota == sim.APIGW
    assert f"nearest: **{sim.APIGW}** at {day.nearest.utilization:.0%}" in doc
    assert f"peak Lambda concurrency **{day.peak_concurrency:,.0f}**" in doc
    assert f"**${day.usd_per_million:,.2f} per million messages**" in doc
    # every message published that was offered: nothing refused, nothing lost
    assert day.messages == pytest.approx(sum(h.offered_messages for h in day.hours))


def test_the_documented_ceilings_are_the_model_s(doc: str) -> None:
    assert "2,000 / 35,000 / 350,000 msg/s (2,000 / 3,500 / 3,500 requests/s) at 1 / 10 / 100 messages of 1 KiB " \
        "per request; with ordering keys 500 / 10,000 / 100,000 msg/s" in doc
    assert "10,000 subscriptions: 10,000 sends, 79 slices of 65 ms handed out by the stream lane at 14.29 " \
        "requests/s" in doc
    assert "1,124 read units a request at 10,000" in doc
    assert "50,000 msg/s costs $64,800.00 a month in requests of 10" in doc
    assert f"| One push subscription | {ceilings.push_messages_s():,.0f} msg/s |" in doc
    # the prose around the blocks
    lane = ceilings.wide_topic(10_000).lane_requests_s
    assert f"falls\nbehind above about {lane:.1f} requests/s" in doc
    loops = PROFILES["long-pulls"].topics[0]
    assert f"`long-pulls` ({loops.count * loops.subscriptions.pullers:,} pull loops" in doc
    hot = PROFILES["hot-topic"]
    assert f"`hot-topic` ({hot.peak_messages_s:,.0f} msg/s on one topic in requests of {hot.topics[0].per_request}:" \
        in doc
    a = json.loads((ROOT / "bench" / "results.json").read_text())["results"]["A"]
    assert f"the benchmark's {a['messages_per_pull']:.0f} messages per pull cost ${a['cost']['usd_per_million']:.2f}" \
        in re.sub(r"\s+", " ", doc)


def test_the_quota_table_lists_the_model_s_constants(doc: str) -> None:
    table = report.current(doc, "capacity-quotas")
    q = DEFAULT_QUOTAS
    for figure in (q.apigw_rps, q.apigw_burst, q.lambda_concurrency, q.ddb_partition_wcu, q.ddb_partition_rcu,
                   q.ddb_on_demand_initial_wcu, q.ddb_table_wcu, q.s3_put_per_prefix, q.sqs_fifo_calls_per_queue):
        assert f"{figure:,}" in table
    assert f"| {q.apigw_integration_timeout_s:.0f} s |" in table


def test_the_model_s_settings_are_the_code_s(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("METRO_PULL_WAIT_SECONDS", "METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS", "METRO_FANOUT_SLICE_SUBSCRIPTIONS",
                 "METRO_INLINE_MAX_BYTES", "METRO_LOG_INLINE_MAX_BYTES", "METRO_PACK_MAX_MESSAGES",
                 "METRO_PUSH_BATCH_SIZE", "METRO_PUSH_MAX_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    from chalicelib.config import Config
    from chalicelib.core import limits
    from chalicelib.core.queueing import sqs_limits
    from chalicelib.store import workers
    from infra.template import Settings

    config, h, q = Config(), Handlers(), DEFAULT_QUOTAS
    assert h.pull_wait_s == config.pull_wait_seconds < q.apigw_integration_timeout_s
    assert h.pull_wait_s <= q.sqs_long_poll_max_s
    assert h.direct_fanout_max_subscriptions == config.direct_fanout_max_subscriptions
    assert h.fanout_slice_subscriptions == config.fanout_slice_subscriptions
    assert h.inline_max_bytes == config.inline_max_bytes
    assert h.log_inline_max_bytes == ops.LOG_INLINE_MAX_BYTES == config.log_inline_max_bytes
    assert config.pack_max_messages == ops.PACK_MAX_MESSAGES
    from chalicelib.service.publish import STREAM_ITEM_WRITES
    assert ops.STREAMED_INLINE_SHARE == STREAM_ITEM_WRITES
    assert h.push_batch_size == config.push_batch_size
    assert h.push_max_concurrency == config.push_max_concurrency
    assert h.send_threads == workers.MAX_WORKERS
    assert h.stream_parallelization == next(f.default for f in dataclasses.fields(Settings)
                                            if f.name == "parallelization_factor")
    assert limits.MAX_PULL_RESPONSE_BYTES == 4_000_000
    assert (q.sqs_batch_entries, q.sqs_batch_bytes) == (sqs_limits.BATCH_ENTRIES, sqs_limits.BATCH_BYTES)
    chalice = json.loads((ROOT / ".chalice" / "config.json").read_text())
    assert q.lambda_timeout_s == chalice["lambda_timeout"]
    assert chalice["lambda_memory_size"] == LAMBDA_MEMORY_GB * 1024


def test_the_command_prints_a_day_and_checks_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.capacity.__main__ import main

    assert main(["--profile", "long-pulls", "--plain", "--tick", "600"]) == 0
    out = capsys.readouterr().out
    assert "Lambda concurrency" in out
    assert "limit that binds: Lambda concurrency first, at 00:00:00 UTC" in out
