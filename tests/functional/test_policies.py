"""Delivery policies on moto through the real services and handlers: delivery attempts, retry backoff after
expiries, dead-lettering (also on push, with ordering keys), a dead-letter topic deleted later, expiration."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest

from chalicelib.api.parsing import page_request, publish_request, subscription_request
from chalicelib.core import names
from chalicelib.core.queueing.backoff import ThrottleState
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import ModifyAckDeadlineRequest, PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.maintenance import expire_idle_subscriptions, sweep_dead_letters
from chalicelib.delivery.push import PushDelivery
from chalicelib.local.push_pump import lambda_record
from chalicelib.runtime import Services
from chalicelib.store import aws
from chalicelib.store.push_state import PushStore, queue_arn
from chalicelib.store.queues import QueueStore, Received
from tests.functional.conftest import FakeClock
from tests.functional.test_message_path import P, ready, stream_event, sub, topic

__all__ = ["ready"]  # a fixture


class Spy(QueueStore):
    """The QueueStore, recording the visibility of every receive and visibility change."""

    def __init__(self, inner: QueueStore) -> None:
        self.__dict__.update(inner.__dict__)  # the same client and settings
        self.inner = inner
        self.received: list[int] = []
        self.changes: list[tuple[str, int]] = []

    def receive(self, url: str, max_messages: int, wait: int, visibility: int) -> list[Received]:
        self.received.append(visibility)
        return self.inner.receive(url, max_messages, wait, visibility)

    def change_visibility_batch(self, url: str, changes: Sequence[tuple[str, int]]) -> list[int]:
        self.changes += changes
        return self.inner.change_visibility_batch(url, changes)


class Unthrottled(PushStore):
    """The push state store, but the throttle state is never saved: every batch starts healthy."""

    def save_throttle(self, sub: str, state: ThrottleState) -> None:
        pass


class Stream:
    """Fans out each stream record once (the test's stand-in for the trigger pump)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.seen: set[str] = set()

    def pump(self) -> None:
        records = [r for r in stream_event(self.services)["Records"]
                   if r["dynamodb"]["SequenceNumber"] not in self.seen]
        self.seen |= {r["dynamodb"]["SequenceNumber"] for r in records}
        if records:
            FanOut(self.services.ctx).handle({"Records": records})


def _publish(services: Services, t: names.Name, *datas: bytes, key: str = "") -> list[str]:
    msgs = [{"data": base64.b64encode(d).decode(), **({"orderingKey": key} if key else {})} for d in datas]
    return list(services.publish.publish(t, publish_request({"messages": msgs})).message_ids)


def _pull(services: Services, s: names.Name) -> list[dict[str, Any]]:
    return list(services.pull.pull(s, PullRequest(10, True)).to_wire().get("receivedMessages", []))


def _queue_url(services: Services, s: names.Name) -> str:
    return services.ctx.resources.require_subscription(s).queue_url


def test_expiry_is_followed_by_the_retry_backoff(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_topic(topic("dlt"), Topic())
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path, "ackDeadlineSeconds": 10,
                                               "retryPolicy": {"minimumBackoff": "30s", "maximumBackoff": "100s"},
                                               "deadLetterPolicy": {"deadLetterTopic": topic("dlt").path}}, sub()))
    clock.advance(1)
    spy = Spy(services.ctx.queues)
    services.ctx.queues = spy
    stream = Stream(services)
    _publish(services, topic(), b"slow")
    stream.pump()
    (first,) = _pull(services, sub())
    assert first["deliveryAttempt"] == 1
    assert spy.received[-1] == 10 + 30  # if this delivery expires, the first backoff follows it
    services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((first["ackId"],), 20))
    assert spy.changes[-1][1] == 20 + 30  # a new deadline keeps the backoff behind it
    # The deadline (and its backoff) pass without an ack: SQS shows the message again.
    receipt = spy.changes[-1][0]
    spy.inner.change_visibility_batch(_queue_url(services, sub()), [(receipt, 0)])
    (second,) = _pull(services, sub())
    assert second["deliveryAttempt"] == 2
    assert spy.changes[-1][1] == 10 + 60  # the second expiry would be followed by a doubled backoff
    services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((second["ackId"],), 0))
    assert spy.changes[-1][1] == 60  # a nack at attempt 2: the same doubled backoff


def test_no_retry_policy_means_no_backoff(ready: Services) -> None:
    spy = Spy(ready.ctx.queues)
    ready.ctx.queues = spy
    _publish(ready, topic(), b"x")
    Stream(ready).pump()
    (msg,) = _pull(ready, sub())
    assert spy.received[-1] == 10 and "deliveryAttempt" not in msg
    ready.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((msg["ackId"],), 0))
    assert spy.changes[-1][1] == 0
    (again,) = _pull(ready, sub())
    assert again["message"]["messageId"] == msg["message"]["messageId"]


def test_missing_dead_letter_topic_keeps_and_counts_messages(services: Services, clock: FakeClock,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_topic(topic("dlt"), Topic())
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path, "deadLetterPolicy": {
        "deadLetterTopic": topic("dlt").path, "maxDeliveryAttempts": 5}}, sub()))
    clock.advance(1)
    services.ctx.config = dataclasses.replace(services.ctx.config, dead_letter_retry_seconds=1)
    stream = Stream(services)
    _publish(services, topic(), b"poison")
    stream.pump()
    services.admin.delete_topic(topic("dlt"))
    for attempt in range(1, 6):
        (msg,) = _pull(services, sub())
        assert msg["deliveryAttempt"] == attempt
        if attempt == 5:
            spy = Spy(services.ctx.queues)
            services.ctx.queues = spy
        services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((msg["ackId"],), 0))
    # The last attempt ends: the topic is missing, so the message is parked (its retry time plus the grace in
    # which the dead-letter sweep can still claim it), not delivered again.
    assert [d for _, d in spy.changes] == [1 + services.ctx.config.dead_letter_grace_seconds]
    assert _pull(services, sub()) == []
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "DeadLetterTopicMissing" in line]
    assert metrics and metrics[0]["Subscription"] == sub().path and metrics[0]["DeadLetterTopicMissing"] == [1.0]
    # The topic comes back: the next try forwards the message, with the right delivery count.
    services.admin.create_topic(topic("dlt"), Topic())
    services.admin.create_subscription(sub("dead"), subscription_request({"topic": topic("dlt").path}, sub("dead")))
    clock.advance(1)  # the parking time is over: the sweep forwards it
    assert sweep_dead_letters(services.ctx) == 1
    stream.pump()
    (dead,) = _pull(services, sub("dead"))
    assert base64.b64decode(dead["message"]["data"]) == b"poison"
    assert dead["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"


def test_ordered_push_dead_letters_one_message_and_unblocks_its_key(services: Services, clock: FakeClock) -> None:
    """Messages behind a nacked one are handed back undelivered: that must not count as their attempts."""
    services.admin.create_topic(topic(), Topic())
    services.admin.create_topic(topic("dlt"), Topic())
    services.admin.create_subscription(sub("dead"), subscription_request({"topic": topic("dlt").path}, sub("dead")))
    services.admin.create_subscription(sub(), subscription_request({
        "topic": topic().path, "enableMessageOrdering": True, "pushConfig": {"pushEndpoint": "http://127.0.0.1:9/h"},
        "retryPolicy": {"minimumBackoff": "0s", "maximumBackoff": "0s"},
        "deadLetterPolicy": {"deadLetterTopic": topic("dlt").path, "maxDeliveryAttempts": 5}}, sub()))
    clock.advance(1)
    stream = Stream(services)
    ids = _publish(services, topic(), b"k:0", b"k:1", b"k:2", key="k")
    stream.pump()
    attempts: dict[str, list[int]] = defaultdict(list)
    order: list[str] = []

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        doc = json.loads(body)
        mid = doc["message"]["messageId"]
        attempts[mid].append(doc["deliveryAttempt"])
        order.append(mid)
        return 500 if mid == ids[0] else 204

    unthrottled = dataclasses.replace(services.ctx, push=Unthrottled(services.ctx.config))  # no flow control here
    delivery = PushDelivery(unthrottled, post=post, sleep=clock.advance, monotonic=clock, workers=1)
    rec = services.ctx.resources.require_subscription(sub())
    sqs = aws.client("sqs", services.ctx.config)
    arn = queue_arn(rec.queue_url, services.ctx.config.region)
    for _ in range(20):
        resp = sqs.receive_message(QueueUrl=rec.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=10,
                                   MessageSystemAttributeNames=["All"])
        if not resp.get("Messages"):
            break
        delivery.handle({"Records": [lambda_record(m, arn, "us-east-1") for m in resp["Messages"]]})
    assert attempts == {ids[0]: [1, 2, 3, 4, 5], ids[1]: [1], ids[2]: [1]}
    assert order[-2:] == ids[1:]  # the key goes on, in order, once its head is dead-lettered
    stream.pump()
    (dead,) = _pull(services, sub("dead"))
    assert dead["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert dead["message"]["orderingKey"] == "k"


def test_expiration_deletes_push_subscriptions_like_a_delete_call(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub("idle-push"), subscription_request({
        "topic": topic().path, "expirationPolicy": {"ttl": "86400s"},
        "pushConfig": {"pushEndpoint": "http://127.0.0.1:9/h"}}, sub("idle-push")))
    services.admin.create_subscription(sub("default"), subscription_request({"topic": topic().path}, sub("default")))
    push = PushStore(services.ctx.config)
    assert sub("idle-push").path in push.index_list()
    clock.advance(86401)
    assert expire_idle_subscriptions(services.ctx) == [sub("idle-push").path]
    assert sub("idle-push").path not in push.index_list()
    listed = services.admin.topic_subscription_names(topic(), page_request({}))
    assert listed.to_wire() == {"subscriptions": [sub("default").path]}
    clock.advance(31 * 86400 - 86401 + 1)  # the default policy: 31 days
    assert expire_idle_subscriptions(services.ctx) == [sub("default").path]
    assert P in sub("default").path


def _nack_until_forwarded(services: Services, s: names.Name, attempts: int) -> dict[str, Any]:
    """Pull and nack ``attempts`` times; the next pull forwards the message. Returns the last delivery."""
    last: dict[str, Any] = {}
    for attempt in range(1, attempts + 1):
        (last,) = _pull(services, s)
        assert last["deliveryAttempt"] == attempt
        services.pull.modify_ack_deadline(s, ModifyAckDeadlineRequest((last["ackId"],), 0))
    assert _pull(services, s) == []  # past maxDeliveryAttempts: forwarded (or dropped), not delivered
    return last


def test_a_dead_letter_cycle_stops_at_the_hop_limit(services: Services, clock: FakeClock,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Topic A's subscription dead-letters to B, B's to A: the message goes round until the hop limit."""
    services.ctx.config = dataclasses.replace(services.ctx.config, dead_letter_max_hops=2)
    services.admin.create_topic(topic("cycle-a"), Topic())
    services.admin.create_topic(topic("cycle-b"), Topic())
    for here, there in (("cycle-a", "cycle-b"), ("cycle-b", "cycle-a")):
        services.admin.create_subscription(sub(here), subscription_request({"topic": topic(here).path,
            "deadLetterPolicy": {"deadLetterTopic": topic(there).path, "maxDeliveryAttempts": 5}}, sub(here)))
    clock.advance(1)
    stream = Stream(services)
    _publish(services, topic("cycle-a"), b"round and round")
    stream.pump()
    first = _nack_until_forwarded(services, sub("cycle-a"), 5)
    assert "CloudPubSubDeadLetterHops" not in first["message"].get("attributes", {})
    stream.pump()
    on_b = _nack_until_forwarded(services, sub("cycle-b"), 5)  # the same path that must stay quiet below
    assert on_b["message"]["attributes"]["CloudPubSubDeadLetterHops"] == "1"
    stream.pump()
    back_on_a = _nack_until_forwarded(services, sub("cycle-a"), 5)
    assert back_on_a["message"]["attributes"]["CloudPubSubDeadLetterHops"] == "2"
    assert base64.b64decode(back_on_a["message"]["data"]) == b"round and round"
    stream.pump()  # the third forward was dropped: nothing reaches B, and A's queue is empty
    assert _pull(services, sub("cycle-b")) == [] and _pull(services, sub("cycle-a")) == []
    assert services.ctx.queues.backlog(_queue_url(services, sub("cycle-a"))) == 0
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "DeadLetterHopLimit" in line]
    assert len(metrics) == 1 and metrics[0]["Subscription"] == sub("cycle-a").path
