"""Small publish requests keep their bytes in the log item and write no S3 object; every reader still finds
every message: the stream's fan-out, seek to a time or a snapshot, and retention."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from chalicelib.api.parsing import acknowledge_request, publish_request, subscription_request
from chalicelib.api.snapshot_requests import create_snapshot_request
from chalicelib.core import limits, names
from chalicelib.core.log_keys import log_partitions
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock, stream_event

P = "inline-project"
TOPIC = names.make(P, "topics", "topic-i")
SUB = names.make(P, "subscriptions", "sub-i")
BIG = "B" * 9000  # its request is above the threshold: an S3 object (the body still travels inline in SQS)


@contextmanager
def s3_calls(services: Services) -> Iterator[list[str]]:
    """The S3 operations made inside the block."""
    calls: list[str] = []

    def count(model: Any, **_: Any) -> None:
        calls.append(model.name)

    events = aws.s3(services.ctx.config).meta.events
    events.register("before-call.s3.*", count)
    try:
        yield calls
    finally:
        events.unregister("before-call.s3.*", count)


def with_config(services: Services, **changes: Any) -> Services:
    ctx = services.ctx
    return Services.build(dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, **changes)))


def make(svc: Services, clock: FakeClock, **sub: Any) -> None:
    svc.admin.create_topic(TOPIC, Topic())
    svc.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path, **sub}, SUB))
    clock.advance(1)


def publish(svc: Services, *texts: str) -> list[str]:
    msgs = [{"data": base64.b64encode(t.encode()).decode(), "attributes": {"n": str(i)}} for i, t in enumerate(texts)]
    return list(svc.publish.publish(TOPIC, publish_request({"messages": msgs})).message_ids)


def pull(svc: Services) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while batch := svc.pull.pull(SUB, PullRequest(100, True)).to_wire().get("receivedMessages", []):
        got.extend(batch)
    return got


def ack(svc: Services, got: list[dict[str, Any]]) -> None:
    svc.pull.acknowledge(SUB, acknowledge_request({"ackIds": [m["ackId"] for m in got]}))


def data(got: list[dict[str, Any]]) -> list[str]:
    return [base64.b64decode(m["message"]["data"]).decode() for m in got]


def log_items(svc: Services) -> list[dict[str, Any]]:
    """The topic's log items (every partition), oldest first (a test publishes one request per clock tick)."""
    ddb = aws.dynamodb(svc.ctx.config)
    items = [item for key in log_partitions(TOPIC.path) for item in ddb.query(
        TableName=svc.ctx.config.messages_table, KeyConditionExpression="topic = :t",
        ExpressionAttributeValues={":t": {"S": key}})["Items"]]
    return sorted(items, key=lambda item: item["rid"]["S"])


@pytest.fixture
def direct(services: Services) -> Services:
    return with_config(services, direct_fanout=True)


@pytest.mark.parametrize("fan_out_in_publish", [False, True])
def test_a_small_publish_writes_no_s3_object(services: Services, clock: FakeClock, fan_out_in_publish: bool) -> None:
    svc = with_config(services, direct_fanout=fan_out_in_publish)
    make(svc, clock)
    with s3_calls(svc) as small:
        publish(svc, "one", "two")
    clock.advance(0.01)
    with s3_calls(svc) as big:
        publish(svc, BIG)
    assert small == [] and big == ["PutObject"]
    inline, stored = log_items(svc)
    assert "body" in inline and inline["key"]["S"].endswith(".inline")
    assert "body" not in stored and stored["key"]["S"].endswith(".mpub")


MIDDLE = "M" * 3000  # kept in its item when publish fans it out, not when the stream does (four item writes)


@pytest.mark.parametrize(("fan_out_in_publish", "max_subscriptions", "calls"), [
    (True, 20, []), (True, 0, ["PutObject"]), (False, 20, ["PutObject"])])
def test_a_request_left_to_the_stream_is_kept_in_its_item_only_below_a_quarter_of_the_limit(
        services: Services, clock: FakeClock, fan_out_in_publish: bool, max_subscriptions: int,
        calls: list[str]) -> None:
    svc = with_config(services, direct_fanout=fan_out_in_publish, direct_fanout_max_subscriptions=max_subscriptions)
    make(svc, clock)
    with s3_calls(svc) as made:
        publish(svc, MIDDLE)
    assert made == calls
    assert FanOut(svc.ctx).handle(stream_event(svc)) == {"batchItemFailures": []}
    assert data(pull(svc)) == [MIDDLE]


def test_the_threshold_setting_turns_it_off(services: Services, clock: FakeClock) -> None:
    svc = with_config(services, log_inline_max_bytes=0)
    make(svc, clock)
    with s3_calls(svc) as calls:
        publish(svc, "one")
    assert calls == ["PutObject"]


def test_the_stream_fans_out_inline_and_stored_requests_without_reading_s3_for_the_small_one(
        services: Services, clock: FakeClock) -> None:
    make(services, clock)
    publish(services, "small")
    publish(services, BIG)
    with s3_calls(services) as calls:
        assert FanOut(services.ctx).handle(stream_event(services)) == {"batchItemFailures": []}
    assert calls == ["GetObject"]  # the big request's object only
    assert sorted(data(pull(services))) == [BIG, "small"]


def test_direct_fan_out_of_a_small_request_touches_no_s3(direct: Services, clock: FakeClock) -> None:
    make(direct, clock)
    with s3_calls(direct) as calls:
        publish(direct, "a", "b")
        assert data(pull(direct)) == ["a", "b"]
    assert calls == []


def test_seek_to_a_time_restores_inline_and_stored_requests(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True)
    publish(direct, "early")
    clock.advance(10)
    middle = clock.now
    publish(direct, "small-1", "small-2")
    publish(direct, BIG)
    clock.advance(1)
    ack(direct, pull(direct))
    direct.seek.seek_to_time(SUB, middle)
    assert sorted(data(pull(direct))) == [BIG, "small-1", "small-2"]


def test_seek_to_a_snapshot_restores_inline_and_stored_requests(direct: Services, clock: FakeClock) -> None:
    make(direct, clock)
    publish(direct, "waiting")
    publish(direct, BIG)
    clock.advance(1)
    snap = names.make(P, "snapshots", "snap-i")
    direct.snapshots.create(snap, create_snapshot_request({"subscription": SUB.path}, snap))
    clock.advance(1)
    publish(direct, "later")
    clock.advance(1)
    ack(direct, pull(direct))
    direct.seek.seek_to_snapshot(SUB, snap)
    assert sorted(data(pull(direct))) == [BIG, "later", "waiting"]


def test_an_inline_item_lives_as_long_as_a_raw_object_and_no_longer(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True)
    published = int(clock.now)
    publish(direct, "small")
    clock.advance(0.01)
    publish(direct, BIG)
    inline, stored = log_items(direct)
    assert inline["ttl"] == stored["ttl"] == {"N": str(published + limits.RETENTION_DEFAULT)}
    ack(direct, pull(direct))
    clock.advance(limits.RETENTION_DEFAULT - 10)
    direct.seek.seek_to_time(SUB, 0)
    assert sorted(data(pull(direct))) == [BIG, "small"]
    clock.advance(20)  # past the items' ttl: the log no longer has them (DynamoDB deletes them eventually)
    direct.seek.seek_to_time(SUB, 0)
    assert pull(direct) == []
