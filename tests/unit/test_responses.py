"""Typed results render as Google's JSON: pages, Empty, publish and metrics answers, a subscription as reported."""

from __future__ import annotations

from chalicelib.core.wire.models import ExpirationPolicy, PushConfig, Subscription, Topic
from chalicelib.core.wire.responses import EMPTY, MetricsResponse, Page, PublishResponse


def test_page_leaves_out_empty_fields() -> None:
    assert Page("topics", ()).to_wire() == {}
    assert Page("subscriptions", (), "next").to_wire() == {"nextPageToken": "next"}


def test_page_renders_resources_and_names() -> None:
    topics = Page("topics", (Topic(name="projects/p/topics/a"), Topic(name="projects/p/topics/b", labels={"k": "v"})),
                  "tok")
    assert topics.to_wire() == {"topics": [{"name": "projects/p/topics/a"},
                                           {"name": "projects/p/topics/b", "labels": {"k": "v"}}],
                                "nextPageToken": "tok"}
    names = Page("subscriptions", ("projects/p/subscriptions/s",))
    assert names.to_wire() == {"subscriptions": ["projects/p/subscriptions/s"]}


def test_page_map_keeps_the_field_and_token() -> None:
    page = Page("subscriptions", ("a", "b"), "tok").map(str.upper)
    assert page == Page("subscriptions", ("A", "B"), "tok")


def test_small_responses() -> None:
    assert EMPTY.to_wire() == {}
    assert PublishResponse(("1", "2")).to_wire() == {"messageIds": ["1", "2"]}
    metric = {"metric": "topic.number_of_messages", "timeseries": []}
    assert MetricsResponse((metric,)).to_wire() == {"metrics": [metric]}
    assert MetricsResponse(()).to_wire() == {"metrics": []}


def test_a_subscription_is_reported_with_google_defaults() -> None:
    plain = Subscription(name="projects/p/subscriptions/s", topic="projects/p/topics/t")
    assert plain.reported().to_wire() == {
        "name": "projects/p/subscriptions/s", "topic": "projects/p/topics/t", "pushConfig": {},
        "ackDeadlineSeconds": 10, "messageRetentionDuration": "604800s", "expirationPolicy": {"ttl": "2678400s"},
        "state": "ACTIVE"}
    assert plain.ack_deadline_seconds == 0  # the stored spec is unchanged


def test_a_subscription_reports_what_was_set() -> None:
    spec = Subscription(name="n", topic="t", push_config=PushConfig(push_endpoint="https://x/h"),
                        ack_deadline_seconds=20, expiration_policy=ExpirationPolicy(),
                        message_retention_duration="600s", state="RESOURCE_ERROR")
    assert spec.reported().to_wire() == {
        "name": "n", "topic": "t", "pushConfig": {"pushEndpoint": "https://x/h"}, "ackDeadlineSeconds": 20,
        "messageRetentionDuration": "600s", "expirationPolicy": {}, "state": "ACTIVE"}
