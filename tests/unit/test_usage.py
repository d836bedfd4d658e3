"""Usage metrics in the ARGO Messaging Service shape (chalicelib/core/usage.py)."""

from __future__ import annotations

from datetime import date, datetime, timezone

from chalicelib.core import usage

GENERATED = datetime(2026, 11, 23, 2, 15, tzinfo=timezone.utc)
ROWS = [
    {"topic": "projects/p/topics/t", "day": date(2026, 11, 21), "messages": 3, "bytes": 30},
    {"topic": "projects/p/topics/t", "day": date(2026, 11, 22), "messages": 4, "bytes": 40},
    {"topic": "projects/p/topics/u", "day": date(2026, 11, 22), "messages": 1, "bytes": 5},
]


def series(doc: dict, name: str) -> list:
    (found,) = [m["timeseries"] for m in doc["metrics"] if m["metric"] == name]
    return found


def test_topic_metrics_from_a_summary() -> None:
    summary = usage.build_summary("p", ROWS, GENERATED)
    doc = usage.topic_metrics(summary, "t", 2, "2026-11-23T09:00:00Z")
    first = doc["metrics"][0]
    assert set(first) == {"metric", "metric_type", "value_type", "resource_type", "resource_name", "timeseries",
                          "description"}
    assert series(doc, "topic.number_of_subscriptions") == [{"timestamp": "2026-11-23T09:00:00Z", "value": 2}]
    assert series(doc, "topic.number_of_messages") == [{"timestamp": "2026-11-23T02:15:00Z", "value": 7}]
    assert series(doc, "topic.number_of_bytes") == [{"timestamp": "2026-11-23T02:15:00Z", "value": 70}]
    assert [p["value"] for p in series(doc, "topic.number_of_daily_messages")] == [3, 4]
    other = usage.topic_metrics(summary, "u", 0, "2026-11-23T09:00:00Z")
    assert series(other, "topic.number_of_messages")[0]["value"] == 1


def test_missing_summary_or_topic_gives_zeros() -> None:
    for summary in (None, usage.build_summary("p", ROWS, GENERATED)):
        doc = usage.topic_metrics(summary, "absent", 0, "2026-11-23T09:00:00Z")
        assert series(doc, "topic.number_of_messages")[0]["value"] == 0
        assert series(doc, "topic.number_of_daily_messages") == []
    doc = usage.project_metrics(None, "q", 0, 0, "2026-11-23T09:00:00Z")
    assert series(doc, "project.number_of_messages") == [{"timestamp": "2026-11-23T09:00:00Z", "value": 0}]


def test_project_and_subscription_metrics() -> None:
    summary = usage.build_summary("p", ROWS, GENERATED)
    doc = usage.project_metrics(summary, "p", 2, 3, "2026-11-23T09:00:00Z")
    assert series(doc, "project.number_of_topics")[0]["value"] == 2
    assert series(doc, "project.number_of_subscriptions")[0]["value"] == 3
    assert series(doc, "project.number_of_messages")[0]["value"] == 8
    assert series(doc, "project.number_of_bytes")[0]["value"] == 75
    assert [p["value"] for p in series(doc, "project.number_of_daily_messages")] == [3, 5]
    sub = usage.subscription_metrics(summary, "s", 12, "2026-11-23T09:00:00Z")
    assert series(sub, "subscription.number_of_undelivered_messages")[0]["value"] == 12
    assert sub["metrics"][0]["metric_type"] == "gauge" and sub["metrics"][0]["resource_name"] == "s"


def test_summary_validation() -> None:
    assert usage.valid_summary({"metrics": []})
    assert not usage.valid_summary({"metrics": {}}) and not usage.valid_summary([]) and not usage.valid_summary(None)
    assert usage.summary_key("p") == "metrics/summary/p.json"
