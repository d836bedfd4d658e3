"""The :metrics use cases on moto: summary in S3 (or none), live counts, NOT_FOUND for unknown resources."""

from __future__ import annotations

import base64
import json
from datetime import date, datetime, timezone
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request, subscription_request
from chalicelib.core import names, usage
from chalicelib.core.errors import InvalidArgument, NotFound
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.responses import MetricsResponse
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock
from tests.functional.test_message_path import stream_event

P = "usage-project"
TOPIC = names.make(P, "topics", "orders")
SUB = names.make(P, "subscriptions", "billing")


def series(doc: MetricsResponse, name: str) -> list[dict[str, Any]]:
    (found,) = [m["timeseries"] for m in doc.to_wire()["metrics"] if m["metric"] == name]
    return list(found)


def put_summary(services: Services, body: bytes) -> None:
    s3 = aws.client("s3", services.ctx.config)
    s3.put_object(Bucket=services.ctx.config.bucket, Key=usage.summary_key(P), Body=body)


def test_metrics_without_and_with_a_summary(services: Services) -> None:
    services.admin.create_topic(TOPIC, Topic())
    services.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path}, SUB))
    metrics = services.usage
    doc = metrics.topic_metrics(TOPIC)  # the job has not run: zeros
    assert series(doc, "topic.number_of_subscriptions")[0]["value"] == 1
    assert series(doc, "topic.number_of_messages")[0]["value"] == 0
    assert series(doc, "topic.number_of_daily_messages") == []

    put_summary(services, b"not json")  # a damaged summary is ignored, not a 500
    assert series(metrics.project_metrics(P), "project.number_of_messages")[0]["value"] == 0

    rows = [{"topic": TOPIC.path, "day": date(2026, 11, 22), "messages": 40, "bytes": 4000}]
    put_summary(services, json.dumps(usage.build_summary(P, rows, datetime.now(timezone.utc))).encode())
    doc = metrics.topic_metrics(TOPIC)
    assert series(doc, "topic.number_of_messages")[0]["value"] == 40
    assert series(doc, "topic.number_of_bytes")[0]["value"] == 4000
    project = metrics.project_metrics(P)
    assert series(project, "project.number_of_topics")[0]["value"] == 1
    assert series(project, "project.number_of_subscriptions")[0]["value"] == 1
    assert series(project, "project.number_of_daily_messages") == [{"timestamp": "2026-11-22T00:00:00Z", "value": 40}]


def test_subscription_backlog_is_read_from_its_queue(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(TOPIC, Topic())
    services.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path}, SUB))
    clock.advance(1)  # subscriptions get only messages published after they exist
    msgs = [{"data": base64.b64encode(b"x").decode()} for _ in range(3)]
    services.publish.publish(TOPIC, publish_request({"messages": msgs}))
    FanOut(services.ctx).handle(stream_event(services))
    doc = services.usage.subscription_metrics(SUB)
    assert series(doc, "subscription.number_of_undelivered_messages")[0]["value"] == 3


def test_unknown_resources(services: Services) -> None:
    metrics = services.usage
    with pytest.raises(NotFound):
        metrics.topic_metrics(TOPIC)
    with pytest.raises(NotFound):
        metrics.subscription_metrics(SUB)
    with pytest.raises(InvalidArgument):
        metrics.project_metrics("bad project!")
    assert series(metrics.project_metrics("empty-project"), "project.number_of_topics")[0]["value"] == 0
