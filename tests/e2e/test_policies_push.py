"""Delivery policies on push subscriptions, end to end: the local stack pushes to a webhook in this process,
subscriptions are made and inspected with google-cloud-pubsub (REST)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.pubsub_v1 import PubsubMessage

from tests.webhooks import Request, Webhook

pytestmark = pytest.mark.e2e
PROJECT = "e2e-push-policies"


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    server = Webhook()
    yield server
    server.close()


def _topic(publisher: Any, rid: str) -> str:
    name = f"projects/{PROJECT}/topics/{rid}"
    publisher.create_topic(name=name)
    return name


def _sub(subscriber: Any, rid: str, topic: str, endpoint: str | None = None, **spec: Any) -> str:
    name = f"projects/{PROJECT}/subscriptions/{rid}"
    if endpoint:
        spec["push_config"] = {"push_endpoint": endpoint}
    subscriber.create_subscription(request={"name": name, "topic": topic, **spec})
    return name


def _pull_until(subscriber: Any, sub: str, count: int, timeout: float = 15) -> list[Any]:
    got: list[Any] = []
    end = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < end:
        got += subscriber.pull(request={"subscription": sub, "max_messages": count - len(got)}).received_messages
    return got


def _data(r: Request) -> bytes:
    import base64

    return base64.b64decode(r.json()["message"]["data"])


def test_push_dead_letter_with_delivery_attempts(publisher: Any, subscriber: Any, webhook: Webhook,
                                                 unique: str) -> None:
    hook = webhook.hook(500)
    topic, dlt = _topic(publisher, f"{unique}-src"), _topic(publisher, f"{unique}-dlt")
    dead = _sub(subscriber, f"{unique}-dead", dlt)
    _sub(subscriber, unique, topic, hook.url, dead_letter_policy={"dead_letter_topic": dlt, "max_delivery_attempts": 5})
    mid = publisher.publish(topic, b"poison", origin="push").result()
    (got,) = _pull_until(subscriber, dead, 1, timeout=45)
    assert [r.json()["deliveryAttempt"] for r in hook.requests] == [1, 2, 3, 4, 5]
    assert {r.message_id for r in hook.requests} == {mid}
    attrs = dict(got.message.attributes)
    assert got.message.data == b"poison" and attrs["origin"] == "push"
    assert attrs["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert attrs["CloudPubSubDeadLetterSourceSubscription"] == unique
    assert attrs["CloudPubSubDeadLetterSourceSubscriptionProject"] == PROJECT
    assert attrs["CloudPubSubDeadLetterSourceTopicPublishTime"]
    hook.quiet_after(lambda: publisher.publish(topic, b"marker").result())
    assert hook.ids().count(mid) == 5  # acknowledged on the source once dead-lettered


def test_push_retry_policy_delays_each_redelivery(publisher: Any, subscriber: Any, webhook: Webhook,
                                                  unique: str) -> None:
    hook = webhook.hook(lambda i, r: 500 if i < 2 else 204)
    topic = _topic(publisher, unique)
    _sub(subscriber, unique, topic, hook.url, retry_policy={"minimum_backoff": "2s", "maximum_backoff": "10s"})
    publisher.publish(topic, b"later").result()
    first, second, third = hook.wait_for(3, 30)[:3]
    assert first.message_id == second.message_id == third.message_id
    assert second.at - first.at >= 1.9  # minimum backoff after the first nack
    assert third.at - second.at >= 3.9  # doubled after the second
    marker = publisher.publish(topic, b"marker").result()
    hook.quiet_after(lambda: marker)
    assert hook.ids() == [first.message_id] * 3 + [marker]


def test_push_filter(publisher: Any, subscriber: Any, webhook: Webhook, unique: str) -> None:
    hook = webhook.hook(204)
    topic = _topic(publisher, unique)
    with pytest.raises(gexc.BadRequest, match="position 28"):
        _sub(subscriber, f"{unique}-bad", topic, hook.url, filter='attributes.color = "red" OR')
    with pytest.raises(gexc.BadRequest, match="256 bytes"):
        _sub(subscriber, f"{unique}-long", topic, hook.url, filter="attributes:" + "k" * 250)
    sub = _sub(subscriber, unique, topic, hook.url, filter='NOT attributes.color = "blue"')
    publisher.publish(topic, b"red", color="red").result()
    publisher.publish(topic, b"blue", color="blue").result()
    publisher.publish(topic, b"none").result()
    hook.wait_for(2, 15)
    hook.quiet_after(lambda: publisher.publish(topic, b"marker", color="red").result())
    assert sorted(_data(r) for r in hook.requests) == [b"marker", b"none", b"red"]
    with pytest.raises(gexc.BadRequest):  # immutable
        subscriber.update_subscription(request={"subscription": {"name": sub, "filter": ""},
                                                "update_mask": {"paths": ["filter"]}})


def test_push_ordering_with_dead_letter_unblocks_the_key(gapic: Any, publisher: Any, subscriber: Any,
                                                         webhook: Webhook, unique: str) -> None:
    """Key k: k0 is always nacked, comes back before its successors, is dead-lettered after 5 attempts, and
    then k1..k4 flow in order with their own attempt counts; key j and unkeyed messages are not held up."""
    def answer(i: int, r: Request) -> int:
        return 500 if _data(r) == b"k0" else 204

    hook = webhook.hook(answer)
    topic, dlt = _topic(publisher, f"{unique}-src"), _topic(publisher, f"{unique}-dlt")
    dead = _sub(subscriber, f"{unique}-dead", dlt)
    _sub(subscriber, unique, topic, hook.url, enable_message_ordering=True,
         dead_letter_policy={"dead_letter_topic": dlt, "max_delivery_attempts": 5})
    gapic.publish(topic=topic, messages=[PubsubMessage(data=f"{k}{i}".encode(), ordering_key=k)
                                         for k in ("k", "j") for i in range(5)]
                  + [PubsubMessage(data=b"free")])
    (got,) = _pull_until(subscriber, dead, 1, timeout=45)
    assert got.message.data == b"k0" and got.message.ordering_key == "k"
    hook.wait_for(5 + 4 + 5 + 1, 15)
    hook.quiet_after(lambda: publisher.publish(topic, b"marker").result())
    seen = [(_data(r), r.json().get("deliveryAttempt")) for r in hook.requests if _data(r) != b"marker"]
    keyed = [s for s in seen if s[0].startswith(b"k")]
    assert keyed == [(b"k0", n) for n in range(1, 6)] + [(f"k{i}".encode(), 1) for i in range(1, 5)]
    assert [s for s in seen if s[0].startswith(b"j")] == [(f"j{i}".encode(), 1) for i in range(5)]
    assert (b"free", 1) in seen
    assert seen.index((b"j4", 1)) < seen.index((b"k0", 5))  # key j did not wait for key k


def test_push_detach_stops_delivery(publisher: Any, subscriber: Any, webhook: Webhook, unique: str) -> None:
    hook, control = webhook.hook(204), webhook.hook(204)
    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic, hook.url)
    _sub(subscriber, f"{unique}-control", topic, control.url)  # still attached: it shows "after" is pushed
    publisher.publish(topic, b"before").result()
    assert hook.wait_for(1, 15)
    publisher.detach_subscription(request={"subscription": sub})
    assert sub not in list(publisher.list_topic_subscriptions(topic=topic))
    control.quiet_after(lambda: publisher.publish(topic, b"after").result(), window=2.5)
    assert [_data(r) for r in control.requests] == [b"before", b"after"]
    assert [_data(r) for r in hook.requests] == [b"before"]
    with pytest.raises(gexc.BadRequest, match="detached"):
        subscriber.pull(request={"subscription": sub, "max_messages": 1, "return_immediately": True})
    assert subscriber.get_subscription(subscription=sub).detached
