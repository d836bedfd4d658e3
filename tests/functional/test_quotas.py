"""Per-project quotas: topics, subscriptions (per project and per topic) and push subscriptions."""

from __future__ import annotations

import dataclasses

import pytest

from chalicelib.config import Quotas
from chalicelib.core import names
from chalicelib.core.errors import AlreadyExists, ResourceExhausted
from chalicelib.core.wire.models import PushConfig, Subscription, Topic
from chalicelib.core.wire.requests import ModifyPushConfigRequest
from chalicelib.runtime import Services

P = "quota-project"


def topic(i: str) -> names.Name:
    return names.make(P, "topics", f"topic-{i}")


def sub(i: str) -> names.Name:
    return names.make(P, "subscriptions", f"sub-{i}")


def limited(services: Services, **limits: int) -> Services:
    config = dataclasses.replace(services.ctx.config, quotas=Quotas(**{
        "topics": 0, "subscriptions": 0, "subscriptions_per_topic": 0, "push_subscriptions": 0, **limits}))
    return Services.build(dataclasses.replace(services.ctx, config=config))


def test_topics_per_project(services: Services) -> None:
    built = limited(services, topics=2)
    built.admin.create_topic(topic("a"), Topic())
    built.admin.create_topic(topic("b"), Topic())
    with pytest.raises(ResourceExhausted, match="topics-per-project") as err:
        built.admin.create_topic(topic("c"), Topic())
    assert err.value.http_code == 429 and err.value.status == "RESOURCE_EXHAUSTED"
    built.admin.create_topic(names.make("other-project", "topics", "topic-c"), Topic())  # per project
    built.admin.delete_topic(topic("a"))
    built.admin.create_topic(topic("c"), Topic())  # a deleted topic frees its slot


def test_subscriptions_per_project_and_per_topic(services: Services) -> None:
    built = limited(services, subscriptions=3, subscriptions_per_topic=2)
    built.admin.create_topic(topic("a"), Topic())
    built.admin.create_topic(topic("b"), Topic())
    built.admin.create_subscription(sub("a1"), Subscription(topic=topic("a").path))
    built.admin.create_subscription(sub("a2"), Subscription(topic=topic("a").path))
    with pytest.raises(ResourceExhausted, match="subscriptions-per-topic"):
        built.admin.create_subscription(sub("a3"), Subscription(topic=topic("a").path))
    with pytest.raises(AlreadyExists):  # an existing name is still ALREADY_EXISTS
        built.admin.create_subscription(sub("a1"), Subscription(topic=topic("a").path))
    built.admin.create_subscription(sub("b1"), Subscription(topic=topic("b").path))
    with pytest.raises(ResourceExhausted, match="subscriptions-per-project"):
        built.admin.create_subscription(sub("b2"), Subscription(topic=topic("b").path))
    assert built.ctx.resources.get_subscription(sub("b2")) is None  # nothing half-created (no queue either)


def test_push_subscriptions_per_project_at_create_and_on_switch(services: Services) -> None:
    built = limited(services, push_subscriptions=1)
    built.admin.create_topic(topic("a"), Topic())
    push = PushConfig(push_endpoint="http://127.0.0.1:9/hook")
    built.admin.create_subscription(sub("p1"), Subscription(topic=topic("a").path, push_config=push))
    with pytest.raises(ResourceExhausted, match="push-subscriptions-per-project"):
        built.admin.create_subscription(sub("p2"), Subscription(topic=topic("a").path, push_config=push))
    built.admin.create_subscription(sub("pull"), Subscription(topic=topic("a").path))
    with pytest.raises(ResourceExhausted, match="push-subscriptions-per-project"):
        built.admin.modify_push_config(sub("pull"), ModifyPushConfigRequest(push))
    built.admin.modify_push_config(sub("p1"), ModifyPushConfigRequest(PushConfig(push_endpoint=push.push_endpoint +
                                                                                   "/other")))  # stays push
    built.admin.modify_push_config(sub("p1"), ModifyPushConfigRequest(PushConfig()))  # back to pull: slot free
    built.admin.modify_push_config(sub("pull"), ModifyPushConfigRequest(push))
