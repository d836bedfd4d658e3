"""Live usage metrics on moto in-process: the per-process tally is written once per flush interval (not per
request), read back by :metrics with rates; the oldest message's age comes from CloudWatch when it has one."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request, pull_request, subscription_request
from chalicelib.core import names
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import AcknowledgeRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store import aws
from chalicelib.store.push_state import queue_name_of
from tests.functional.conftest import FakeClock, stream_event

P = "live-project"
TOPIC, SUB = names.make(P, "topics", "live-topic"), names.make(P, "subscriptions", "live-sub")


@pytest.fixture
def ready(services: Services) -> Services:
    services.admin.create_topic(TOPIC, Topic())
    services.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path}, SUB))
    return services


def values(answer: Any) -> dict[str, Any]:
    return {m["metric"]: [p["value"] for p in m["timeseries"]] for m in answer.to_wire()["metrics"]}


def publish(services: Services, *data: bytes) -> None:
    """Publish, then fan out from the stream (these tests run without direct fan-out)."""
    body = {"messages": [{"data": base64.b64encode(d).decode()} for d in data]}
    rid = services.publish.publish(TOPIC, publish_request(body)).message_ids[0][:-3]
    event = stream_event(services)
    event["Records"] = [r for r in event["Records"] if r["dynamodb"]["NewImage"]["rid"]["S"] == rid]
    FanOut(services.ctx).handle(event)


def test_the_tally_is_written_once_per_interval_and_read_back(ready: Services, clock: FakeClock,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[str] = []
    original = ready.ctx.counters.flush
    monkeypatch.setattr(ready.ctx.counters, "flush", lambda tally, now: writes.append("flush") or original(tally, now))
    publish(ready, b"ab", b"cde")  # starts the tally
    clock.advance(4)
    publish(ready, b"f")
    assert writes == [] and values(ready.usage.topic_metrics(TOPIC))["topic.number_of_published_messages"] == [0]
    clock.advance(6)  # the interval (10 s) is over: the next count writes the whole tally
    got = ready.pull.pull(SUB, pull_request({"maxMessages": 10, "returnImmediately": True}))
    assert writes == ["flush"]
    topic = values(ready.usage.topic_metrics(TOPIC))
    assert topic["topic.number_of_published_messages"] == [3] and topic["topic.number_of_published_bytes"] == [6]
    assert topic["topic.publishing_rate"] == [0.3]  # 3 messages over the 10 s interval
    ready.pull.acknowledge(SUB, AcknowledgeRequest(tuple(m.ack_id for m in got.received)))
    clock.advance(10)
    publish(ready, b"g")  # any count flushes the tally that is due
    sub = values(ready.usage.subscription_metrics(SUB))
    assert sub["subscription.number_of_delivered_messages"] == [3]
    assert sub["subscription.number_of_acknowledged_messages"] == [3]
    assert sub["subscription.number_of_waiting_messages"] == [1]  # g
    assert values(ready.usage.project_metrics(P))["project.number_of_published_messages"] == [4]


def test_the_oldest_messages_age_comes_from_cloudwatch(ready: Services, clock: FakeClock) -> None:
    age = "subscription.oldest_unacked_message_age"
    assert values(ready.usage.subscription_metrics(SUB))[age] == []  # no figure yet: no point
    rec = ready.ctx.resources.require_subscription(SUB)
    when = datetime.datetime.fromtimestamp(clock() - 120, tz=datetime.timezone.utc)
    aws.client("cloudwatch", ready.ctx.config).put_metric_data(Namespace="AWS/SQS", MetricData=[{
        "MetricName": "ApproximateAgeOfOldestMessage", "Value": 42.0, "Timestamp": when,
        "Dimensions": [{"Name": "QueueName", "Value": queue_name_of(rec.queue_url)}]}])
    assert values(ready.usage.subscription_metrics(SUB))[age] == [42]
