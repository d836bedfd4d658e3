"""The capacity model's simulation (bench/capacity/simulate.py): each quota binds where the arithmetic says, on
short runs of flat traffic."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bench.capacity import simulate as sim
from bench.capacity import subscribers
from bench.capacity.engine import EventQueue
from bench.capacity.profile import PROFILES, Handlers, Profile, Subscriptions, TopicClass


def flat(peak: float, *topics: TopicClass, **kw: object) -> Profile:
    """A profile whose rate is ``peak`` all day."""
    return Profile("flat", peak, tuple(topics), trough=1.0, **kw)  # type: ignore[arg-type]


def quiet_pulls(topics: int, loops: int) -> Profile:
    return flat(topics * 0.2, TopicClass("quiet", count=topics, share=1.0, per_request=1,
                                         subscriptions=Subscriptions(pull=1, pullers=loops)))


def test_events_run_in_time_order_and_ties_in_the_order_scheduled() -> None:
    q, seen = EventQueue(), []
    for t, name in ((2.0, "b"), (1.0, "a"), (2.0, "c")):
        q.at(t, lambda _t, name=name: seen.append(name))  # type: ignore[misc]
    q.at(1.5, lambda t: q.after(0.25, lambda _t: seen.append(f"scheduled at {t}")))
    q.run(until=10.0)
    assert seen == ["a", "scheduled at 1.5", "b", "c"]
    assert q.now == 10.0
    q.at(3.0, lambda _t: seen.append("late"))  # in the past: runs at once, at the current time
    q.run(until=10.5)
    assert seen[-1] == "late"


def test_a_day_is_deterministic_for_its_seed() -> None:
    p = flat(2000.0, TopicClass("t", count=4, share=1.0))
    one, two = sim.simulate(p, seconds=600), sim.simulate(p, seconds=600)
    assert one.messages == two.messages
    assert one.usage == two.usage
    other = sim.simulate(dataclasses.replace(p, seed=2), seconds=600)
    assert other.messages != one.messages
    assert other.messages == pytest.approx(one.messages, rel=0.01)


HOT = TopicClass("hot", count=1, share=1.0, per_request=10, subscriptions=Subscriptions(pull=1, pullers=16))
HOT_ORDERED = dataclasses.replace(HOT, ordered=True)


def test_an_ordered_hot_topic_above_1000_publish_requests_a_second_is_throttled_by_its_partition() -> None:
    hot = HOT_ORDERED
    day = sim.simulate(flat(12_000.0, hot), seconds=120)  # 1,200 requests/s on the topic's own partition key
    assert day.first_binding is not None
    assert day.first_binding.quota == sim.DDB_PARTITION
    assert day.first_binding.time_s < 2
    hour = day.hours[0]
    assert hour.peak_partition_wcu == pytest.approx(1000)
    assert hour.throttled[sim.DDB_PARTITION] > 200 * 120
    assert hour.peak_messages_s == pytest.approx(10_000, rel=0.01)  # what the partition lets through
    below = sim.simulate(flat(9_000.0, hot), seconds=120)
    assert below.first_binding is None
    assert below.hours[0].utilization[sim.DDB_PARTITION] == pytest.approx(0.9, rel=0.1)


def test_unordered_requests_spread_over_four_partitions_until_s3_s_prefix_binds() -> None:
    assert sim.simulate(flat(12_000.0, HOT), seconds=120).first_binding is None  # 300 requests/s a partition
    day = sim.simulate(flat(40_000.0, HOT), seconds=120)  # 4,000 PutObject/s under one prefix
    assert day.first_binding is not None and day.first_binding.quota == sim.S3_PREFIX
    hour = day.hours[0]
    assert day.first_binding.utilization == pytest.approx(4000 / 3500, rel=0.05)  # arrivals are drawn
    assert hour.peak_partition_wcu == pytest.approx(3500 / 4, rel=0.02)  # what S3 let through, over 4 keys


def test_single_message_requests_skip_s3_and_write_2_units_over_four_partitions() -> None:
    single = dataclasses.replace(HOT, per_request=1)
    day = sim.simulate(flat(2_400.0, single), seconds=120)  # 2,400 items of 2 write units: 4,800 for 4,000
    assert day.first_binding is not None and day.first_binding.quota == sim.DDB_PARTITION
    hour = day.hours[0]
    assert hour.peak_prefix_puts == 0
    assert hour.peak_partition_wcu == pytest.approx(1000)
    assert day.first_binding.utilization == pytest.approx(1.2, rel=0.05)
    assert sim.simulate(flat(1_800.0, single), seconds=120).first_binding is None


def test_the_same_rate_spread_over_topics_is_not_throttled() -> None:
    spread = TopicClass("spread", count=3, share=1.0, per_request=10, subscriptions=Subscriptions(pull=1, pullers=8))
    assert sim.simulate(flat(12_000.0, spread), seconds=120).first_binding is None


def test_sustained_overload_ends_in_failed_publishes_after_the_retries() -> None:
    day = sim.simulate(flat(30_000.0, HOT_ORDERED), seconds=300)
    assert day.hours[0].failed_publishes > 0
    assert day.hours[0].peak_partition_wcu == pytest.approx(1000)


def test_1200_concurrent_long_pulls_exceed_lambda_s_concurrency() -> None:
    day = sim.simulate(quiet_pulls(300, 4), seconds=60)  # 1,200 loops, 0.2 msg/s each topic
    assert day.first_binding is not None
    assert (day.first_binding.quota, day.first_binding.time_s) == (sim.LAMBDA, 0.0)
    hour = day.hours[0]
    assert hour.utilization[sim.LAMBDA] == pytest.approx(1.2, abs=0.02)
    assert hour.peak_concurrency == pytest.approx(1000)
    assert hour.peak_long_pulls == pytest.approx(1000, abs=20)
    # a waiting pull bills its wait: about 1,000 Lambdas x 60 s x 0.5 GB
    assert hour.usage.gb_s == pytest.approx(1000 * 60 * 0.5, rel=0.05)
    fewer = sim.simulate(quiet_pulls(200, 4), seconds=60)  # 800 loops fit
    assert fewer.first_binding is None
    assert fewer.hours[0].peak_long_pulls == pytest.approx(800, abs=20)


WIDE = TopicClass("wide", count=1, share=1.0, per_request=10, subscriptions=Subscriptions(pull=10_000, pullers=0))
UNSLICED = Handlers(fanout_slice_subscriptions=0)


def test_a_10k_subscription_topic_falls_behind_in_one_stream_lane_without_slices() -> None:
    wide = WIDE
    day = sim.simulate(flat(5.0, wide, handlers=UNSLICED), seconds=600)  # 0.5 requests/s; the lane sends 0.32 a second
    assert day.first_binding is not None
    assert day.first_binding.quota == sim.FANOUT_LANE
    hour = day.hours[0]
    assert hour.utilization[sim.FANOUT_LANE] == pytest.approx(0.5 * 3.150, rel=0.01)
    assert hour.peak_fanout_lag_s > 60
    assert hour.usage.sqs_calls == pytest.approx(10_000 * 600 / 3.150, rel=0.02)  # the lane's pace, not the publish's
    slow = sim.simulate(flat(2.0, wide, handlers=UNSLICED), seconds=600)  # 0.2 requests/s: a few records wait
    assert slow.first_binding is None


def test_slices_take_a_10k_subscription_topic_to_14_requests_a_second_in_parallel_executions() -> None:
    assert sim.simulate(flat(5.0, WIDE), seconds=600).first_binding is None  # what one lane could not keep up with
    day = sim.simulate(flat(120.0, WIDE), seconds=600)  # 12 requests/s: 79 slices each, 65 ms per slice
    assert day.first_binding is None
    hour = day.hours[0]
    lane = 1000 / (10_000 * 0.002 + 5 + 3 * 15)  # the lane's own work, the completion item, 3 rounds of invokes
    assert hour.utilization[sim.FANOUT_LANE] == pytest.approx(12 / lane, rel=0.02)
    assert hour.usage.sqs_calls == pytest.approx(10_000 * 12 * 600, rel=0.02)
    assert hour.usage.invocations > 79 * 12 * 600  # a slice is an invocation
    # the slices in flight (Little's law) at the busiest step, at most what the lane hands out; the lane and publish
    assert 12 * 79 * 0.0651 < hour.peak_concurrency < lane * 79 * 0.0651 + 3
    over = sim.simulate(flat(200.0, WIDE), seconds=600)  # 20 requests/s: the lane hands out 14.3
    assert over.first_binding is not None and over.first_binding.quota == sim.FANOUT_LANE


def test_a_new_on_demand_table_takes_4000_writes_then_twice_its_peak_30_minutes_later() -> None:
    many = TopicClass("many", count=10, share=1.0, per_request=10, subscriptions=Subscriptions(pull=1, pullers=16))
    p = flat(60_000.0, many, table_previous_peak_wcu=0.0)  # 6,000 writes/s: 600 per topic, no partition throttles
    half_hour = sim.Day(p)
    first = half_hour.run(2400)
    assert first.first_binding is not None
    assert first.first_binding.quota == sim.DDB_TABLE
    assert half_hour.adopted_peak == pytest.approx(4000)  # capacity 8,000 since 30 min after the first second
    hour = sim.simulate(p, seconds=3600)
    assert hour.throttled()[sim.DDB_TABLE] == pytest.approx(first.throttled()[sim.DDB_TABLE])  # none after 40 min
    warm = sim.simulate(dataclasses.replace(p, table_previous_peak_wcu=6000.0), seconds=600)
    assert warm.first_binding is None


def test_api_gateway_s_token_bucket_caps_requests_a_second() -> None:
    many = TopicClass("many", count=120, share=1.0, per_request=1, subscriptions=Subscriptions(pull=1, pullers=1))
    p = flat(11_000.0, many, table_previous_peak_wcu=20_000.0)  # 11,000 publishes/s and the pulls
    day = sim.simulate(p, seconds=120)
    assert day.first_binding is not None
    assert day.first_binding.quota == sim.APIGW
    assert day.hours[0].peak_api_rps <= 10_000 + 5_000


def test_every_named_profile_binds_where_its_comment_says() -> None:
    hot = sim.Day(PROFILES["hot-topic"]).run(3600 * 9)  # the prefix's 3,500 PutObject/s, about 08:30
    assert hot.first_binding is not None
    assert hot.first_binding.quota == sim.S3_PREFIX
    assert 8 * 3600 < hot.first_binding.time_s < 9 * 3600
    pulls = sim.simulate(PROFILES["long-pulls"], seconds=60)
    assert pulls.first_binding is not None
    assert pulls.first_binding.quota == sim.LAMBDA
    wide = sim.simulate(PROFILES["wide-fanout"], seconds=3600 * 12)
    assert wide.first_binding is not None
    assert wide.first_binding.quota == sim.FANOUT_LANE


def test_pull_loops_carry_what_accumulated_since_the_last_pull() -> None:
    c = TopicClass("t", count=1, share=1.0, subscriptions=Subscriptions(pull=1, pullers=2))
    h = Handlers()
    busy = subscribers.pull_subscription(87.0, c, h)
    # a cycle of m < 10 messages: pull 5 + 2 x 10 ms (the receive that brings them, the empty one that ends it),
    # ack 5 + 10 ms, client 50 ms = 90 ms, and m = 87 x cycle / 2 loops = 3.915
    m = 87.0 / (busy.api_rps / 2)
    assert m == pytest.approx(87 * 0.090 / 2, rel=0.01)
    pulls = 87.0 / m
    # every loop busy, none waiting: the pulls in progress only, 25 ms each
    assert busy.long_pulls == pytest.approx(pulls * 25 / 1000, abs=0.01)
    quiet = subscribers.pull_subscription(0.1, c, h)
    assert quiet.long_pulls == pytest.approx(2.0, abs=0.01)  # both loops wait, holding a Lambda each
    empty = 2 * math.exp(-0.1 * 10 / 2) / 10  # waits that end with nothing, per second
    assert quiet.api_rps == pytest.approx(2 * 0.1 + empty, rel=0.01)
    assert quiet.usage_s.gb_s == pytest.approx(2 * 0.5, rel=0.01)  # two waiting Lambdas of 0.5 GB
    assert subscribers.pull_subscription(87.0, dataclasses.replace(
        c, subscriptions=Subscriptions(pull=1, pullers=0)), h).api_rps == 0


def test_a_push_mapping_without_a_batching_window_invokes_per_message_at_moderate_rates() -> None:
    from bench.capacity import usage as ops
    from bench.capacity.quotas import DEFAULT_QUOTAS

    push = ops.push_batch()
    moderate = subscribers.push_subscription(87.0, push, Handlers(), DEFAULT_QUOTAS)
    assert moderate.push_invocations == pytest.approx(87.0)  # 87 x 50 ms / 5 pollers < 1 message per batch
    assert moderate.usage_s.sqs_calls == pytest.approx(3 * 87.0, rel=0.01)
    flood = subscribers.push_subscription(5000.0, push, Handlers(), DEFAULT_QUOTAS)
    assert flood.push_invocations == pytest.approx(100.0)  # 5 at once, 10 each, every 50 ms: 1,000 msg/s
    assert flood.shortfall == pytest.approx(4000.0)
