"""A topic's log spreads over partitions of the messages table: requests without ordering keys over several, those
with ordering keys in the topic's own; every read by topic still sees the whole log in publish order."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from chalicelib.api.parsing import acknowledge_request, publish_request, subscription_request
from chalicelib.core import names
from chalicelib.core.log_keys import LOG_SHARDS
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.runtime import Services
from chalicelib.store.log_bounds import LogBounds
from tests.functional.conftest import FakeClock

P = "partitions"
TOPIC = names.make(P, "topics", "spread")
SUB = names.make(P, "subscriptions", "all")


@pytest.fixture
def direct(services: Services, clock: FakeClock) -> Services:
    ctx = services.ctx
    svc = Services.build(dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, direct_fanout=True)))
    svc.admin.create_topic(TOPIC, Topic())
    clock.advance(1)
    return svc


def publish(svc: Services, clock: FakeClock, text: str, key: str = "") -> str:
    msg = {"data": base64.b64encode(text.encode()).decode(), **({"orderingKey": key} if key else {})}
    (mid,) = svc.publish.publish(TOPIC, publish_request({"messages": [msg]})).message_ids
    clock.advance(0.002)
    return mid


def drain(svc: Services) -> list[str]:
    got: list[str] = []
    while batch := svc.pull.pull(SUB, PullRequest(10, True)).to_wire().get("receivedMessages", []):
        svc.pull.acknowledge(SUB, acknowledge_request({"ackIds": [m["ackId"] for m in batch]}))
        got.extend(base64.b64decode(m["message"]["data"]).decode() for m in batch)
    return got


def shards(svc: Services, clock: FakeClock) -> set[int]:
    return {e.shard for page in svc.ctx.history.entries(TOPIC.path, 0, clock.now) for e in page}


def test_unordered_requests_spread_and_the_history_reads_them_in_publish_order(direct: Services,
                                                                               clock: FakeClock) -> None:
    ids = [publish(direct, clock, f"m{i}") for i in range(30)]
    pages = list(direct.ctx.history.entries(TOPIC.path, 0, clock.now))
    read = [e.request_id for page in pages for e in page]
    assert read == sorted(read) and [f"{r}000" for r in read] == ids
    assert len(shards(direct, clock)) > 1 and shards(direct, clock) <= set(range(1, LOG_SHARDS + 1))


def test_ordered_requests_stay_in_the_topics_own_partition_and_seek_keeps_their_order(direct: Services,
                                                                                      clock: FakeClock) -> None:
    direct.admin.create_subscription(SUB, subscription_request(
        {"topic": TOPIC.path, "enableMessageOrdering": True, "retainAckedMessages": True}, SUB))
    clock.advance(1)
    start = clock.now
    for i in range(12):
        publish(direct, clock, f"k{i}", key="k")
    assert shards(direct, clock) == {0}
    assert drain(direct) == [f"k{i}" for i in range(12)]
    direct.seek.seek_to_time(SUB, start)
    assert drain(direct) == [f"k{i}" for i in range(12)]


def test_seek_restores_requests_of_every_partition(direct: Services, clock: FakeClock) -> None:
    direct.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path, "retainAckedMessages": True},
                                                                SUB))
    clock.advance(1)
    start = clock.now
    texts = [f"m{i}" for i in range(20)] + ["ordered"]
    for text in texts:
        publish(direct, clock, text, key="k" if text == "ordered" else "")
    assert sorted(drain(direct)) == sorted(texts)
    direct.seek.seek_to_time(SUB, start)
    assert sorted(drain(direct)) == sorted(texts)


def test_the_logs_ends_are_found_across_partitions(direct: Services, clock: FakeClock) -> None:
    bounds = LogBounds(direct.ctx.config)
    assert bounds.newest(TOPIC.path) is None
    ids = [publish(direct, clock, f"m{i}", key="k" if i == 3 else "") for i in range(10)]
    rids = [mid[:19] for mid in ids]
    assert bounds.newest(TOPIC.path) == max(rids)
    assert bounds.first_from(TOPIC.path, 0) == min(rids)
    assert bounds.first_from(TOPIC.path, int(rids[5][:13])) == rids[5]
    assert bounds.first_from(TOPIC.path, int(clock.now * 1000) + 1) is None
