"""Publish -> stream record -> fan-out handler -> pull/ack, on moto, with Lambda-shaped events."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from chalicelib.api.parsing import (
    acknowledge_request,
    page_request,
    publish_request,
    pull_request,
    subscription_request,
    update_subscription_request,
)
from chalicelib.core import limits, names
from chalicelib.core.errors import FailedPrecondition, InvalidArgument, NotFound
from chalicelib.core.wire.models import ExpirationPolicy, Subscription, Topic
from chalicelib.core.wire.requests import ModifyAckDeadlineRequest, PullRequest, UpdateSubscriptionRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock, stream_event

P = "func-project"


def topic(i: str = "topic-a") -> names.Name:
    return names.make(P, "topics", i)


def sub(i: str = "sub-a") -> names.Name:
    return names.make(P, "subscriptions", i)


def publish(services: Services, *datas: bytes, attrs: dict[str, str] | None = None) -> list[str]:
    msgs = [{"data": base64.b64encode(d).decode(), **({"attributes": attrs} if attrs else {})} for d in datas]
    return list(services.publish.publish(topic(), publish_request({"messages": msgs})).message_ids)


def pull(services: Services, n: int = 10) -> list[dict[str, Any]]:
    return list(services.pull.pull(sub(), PullRequest(n, True)).to_wire().get("receivedMessages", []))


@pytest.fixture
def ready(services: Services, clock: FakeClock) -> Services:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    clock.advance(1)
    return services


def test_publish_fanout_pull_ack(ready: Services) -> None:
    ids = publish(ready, b"one", b"two", b"\x00\xff binary")
    result = FanOut(ready.ctx).handle(stream_event(ready))
    assert result == {"batchItemFailures": []}
    got = pull(ready)
    assert [m["message"]["messageId"] for m in got] == ids
    assert base64.b64decode(got[2]["message"]["data"]) == b"\x00\xff binary"
    ready.pull.acknowledge(sub(), acknowledge_request({"ackIds": [m["ackId"] for m in got]}))
    assert pull(ready) == []


def test_large_bodies_are_read_from_s3(ready: Services) -> None:
    big = bytes(range(256)) * 400  # 100 KiB: above the inline threshold
    ids = publish(ready, big, b"small")
    FanOut(ready.ctx).handle(stream_event(ready))
    got = pull(ready)
    assert [m["message"]["messageId"] for m in got] == ids
    assert base64.b64decode(got[0]["message"]["data"]) == big


def test_subscription_gets_only_messages_published_after_it(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(topic(), Topic())
    publish(services, b"before")
    clock.advance(1)
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    clock.advance(1)
    after = publish(services, b"after")
    FanOut(services.ctx).handle(stream_event(services))
    assert [m["message"]["messageId"] for m in pull(services)] == after


def test_fanout_reports_only_the_failed_record(ready: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second, third = publish(ready, b"a"), publish(ready, b"b"), publish(ready, b"c")
    event = stream_event(ready)
    fan = FanOut(ready.ctx)
    original = fan.deliver

    def flaky(entry: Any, subs: Any) -> int:
        if entry.request_id == second[0][:-3]:
            raise RuntimeError("SQS is down for this one")
        return original(entry, subs)

    monkeypatch.setattr(fan, "deliver", flaky)
    result = fan.handle(event)
    failed = [f["itemIdentifier"] for f in result["batchItemFailures"]]
    assert failed == [event["Records"][1]["dynamodb"]["SequenceNumber"]]
    # Lambda retries from the failed record: only it (and what follows) is handed back.
    monkeypatch.setattr(fan, "deliver", original)
    assert fan.handle({"Records": event["Records"][1:2]}) == {"batchItemFailures": []}
    got = {m["message"]["messageId"] for m in pull(ready)}
    assert got == {first[0], second[0], third[0]}


def test_nack_redelivers_and_modack_extends(ready: Services) -> None:
    publish(ready, b"x")
    FanOut(ready.ctx).handle(stream_event(ready))
    (msg,) = pull(ready)
    assert pull(ready) == []  # held by the lease
    ready.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((msg["ackId"],), 0))
    (again,) = pull(ready)
    assert again["message"]["messageId"] == msg["message"]["messageId"]
    assert again["ackId"] != msg["ackId"]


def test_forged_ack_id_is_refused(ready: Services) -> None:
    publish(ready, b"x")
    FanOut(ready.ctx).handle(stream_event(ready))
    (msg,) = pull(ready)
    body, mac = msg["ackId"].split(".")
    with pytest.raises(InvalidArgument):
        ready.pull.acknowledge(sub(), acknowledge_request({"ackIds": [body[:-2] + "AA." + mac]}))
    with pytest.raises(InvalidArgument):
        ready.pull.acknowledge(sub(), acknowledge_request({"ackIds": []}))


def test_errors(services: Services) -> None:
    with pytest.raises(NotFound):
        services.publish.publish(topic(), publish_request({"messages": [{"data": "aGk="}]}))
    services.admin.create_topic(topic(), Topic())
    with pytest.raises(InvalidArgument):
        services.publish.publish(topic(), publish_request({"messages": [{}]}))
    with pytest.raises(NotFound):
        services.admin.create_subscription(sub(), subscription_request({"topic": topic("missing").path}, sub()))
    with pytest.raises(InvalidArgument):
        services.admin.create_subscription(sub(), subscription_request(
            {"topic": topic().path, "ackDeadlineSeconds": 5}, sub()))
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    with pytest.raises(InvalidArgument):
        services.pull.pull(sub(), pull_request({"maxMessages": 0}))
    services.admin.patch_subscription(sub(), UpdateSubscriptionRequest(Subscription(detached=True), ("detached",)))
    with pytest.raises(FailedPrecondition):
        services.pull.pull(sub(), pull_request({"maxMessages": 1}))


def test_deleted_topic_detaches_subscriptions(ready: Services) -> None:
    ready.admin.delete_topic(topic())
    assert ready.admin.get_subscription(sub()).spec.topic == "_deleted-topic_"
    ready.admin.create_topic(topic(), Topic())
    assert ready.admin.topic_subscription_names(topic(), page_request({})).to_wire() == {}


def _sub_with(services: Services, clock: FakeClock, **spec: Any) -> None:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path, **spec}, sub()))
    clock.advance(1)


def test_dead_letter_after_max_attempts(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(topic("dead"), Topic())
    services.admin.create_subscription(sub("dead-sub"), subscription_request(
        {"topic": topic("dead").path}, sub("dead-sub")))
    _sub_with(services, clock, deadLetterPolicy={"deadLetterTopic": topic("dead").path, "maxDeliveryAttempts": 5})
    (mid,) = publish(services, b"poison", attrs={"k": "v"})
    FanOut(services.ctx).handle(stream_event(services))
    for attempt in range(1, 6):
        (msg,) = pull(services)
        assert msg["deliveryAttempt"] == attempt
        services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((msg["ackId"],), 0))
    assert pull(services) == []  # the fifth nack forwarded it
    FanOut(services.ctx).handle(stream_event(services))
    got = services.pull.pull(sub("dead-sub"), pull_request({"maxMessages": 5})).to_wire()["receivedMessages"]
    attrs = got[0]["message"]["attributes"]
    assert base64.b64decode(got[0]["message"]["data"]) == b"poison"
    assert attrs["k"] == "v" and attrs["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert attrs["CloudPubSubDeadLetterSourceSubscription"] == "sub-a"
    assert attrs["CloudPubSubDeadLetterSourceSubscriptionProject"] == P
    assert mid


def test_missing_dead_letter_topic_is_refused(services: Services) -> None:
    services.admin.create_topic(topic(), Topic())
    with pytest.raises(InvalidArgument):
        services.admin.create_subscription(sub(), subscription_request(
            {"topic": topic().path, "deadLetterPolicy": {"deadLetterTopic": topic("nope").path}}, sub()))


def test_exactly_once_acks(services: Services, clock: FakeClock) -> None:
    _sub_with(services, clock, enableExactlyOnceDelivery=True)
    publish(services, b"a", b"b")
    FanOut(services.ctx).handle(stream_event(services))
    first, second = pull(services)
    services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((second["ackId"],), 60))
    clock.advance(11)  # first's deadline passes; second's was extended
    ack = services.pull.acknowledge
    with pytest.raises(InvalidArgument) as err:
        ack(sub(), acknowledge_request({"ackIds": [first["ackId"]]}))
    meta = err.value.details[0]["metadata"]
    assert meta == {first["ackId"]: "PERMANENT_FAILURE_INVALID_ACK_ID"}
    # The expired id fails, while a valid id in the same request succeeds.
    with pytest.raises(InvalidArgument) as err:
        ack(sub(), acknowledge_request({"ackIds": [first["ackId"], second["ackId"]]}))
    assert list(err.value.details[0]["metadata"]) == [first["ackId"]]
    with pytest.raises(InvalidArgument):  # acked: a second ack of the same id fails
        ack(sub(), acknowledge_request({"ackIds": [second["ackId"]]}))


def test_filter_is_validated_and_applied(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(topic(), Topic())
    with pytest.raises(InvalidArgument, match="position"):
        services.admin.create_subscription(sub(), subscription_request(
            {"topic": topic().path, "filter": "attributes.k ="}, sub()))
    services.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "filter": 'attributes.k = "yes"'}, sub()))
    clock.advance(1)
    publish(services, b"no", attrs={"k": "no"})
    (wanted,) = publish(services, b"yes", attrs={"k": "yes"})
    FanOut(services.ctx).handle(stream_event(services))
    assert [m["message"]["messageId"] for m in pull(services)] == [wanted]
    with pytest.raises(InvalidArgument):
        services.admin.patch_subscription(sub(), update_subscription_request(
            {"subscription": {"filter": ""}, "updateMask": "filter"}, sub()))


def test_detach_drops_backlog(ready: Services) -> None:
    publish(ready, b"x")
    FanOut(ready.ctx).handle(stream_event(ready))
    ready.admin.detach_subscription(sub())
    with pytest.raises(FailedPrecondition):
        pull(ready)
    assert ready.admin.topic_subscription_names(topic(), page_request({})).to_wire() == {}


def test_idle_subscriptions_expire(services: Services, clock: FakeClock) -> None:
    from chalicelib.delivery.maintenance import expire_idle_subscriptions

    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub("short"), subscription_request(
        {"topic": topic().path, "expirationPolicy": {"ttl": "86400s"}}, sub("short")))
    services.admin.create_subscription(sub("never"), subscription_request(
        {"topic": topic().path, "expirationPolicy": {}}, sub("never")))
    services.admin.create_subscription(sub("used"), subscription_request(
        {"topic": topic().path, "expirationPolicy": {"ttl": "86400s"}}, sub("used")))
    clock.advance(86000)
    services.pull.pull(sub("used"), PullRequest(1, True))  # activity
    clock.advance(1000)
    assert expire_idle_subscriptions(services.ctx) == [sub("short").path]
    with pytest.raises(NotFound):
        services.admin.get_subscription(sub("short"))
    assert services.admin.get_subscription(sub("never")).spec.expiration_policy == ExpirationPolicy()


def test_pull_size_counts_s3_bodies_whatever_their_attributes(ready: Services) -> None:
    """An S3-pointer envelope with an attribute named "d" is sized by its body, not by its queue text."""
    body = bytes(900_000)  # above the inline threshold: the queue holds a pointer to S3
    ids = [publish(ready, body, attrs={"d": "looks inline"})[0] for _ in range(6)]
    FanOut(ready.ctx).handle(stream_event(ready))
    first = pull(ready)
    assert sum(len(base64.b64decode(m["message"]["data"])) for m in first) <= limits.MAX_PULL_RESPONSE_BYTES
    assert len(first) == limits.MAX_PULL_RESPONSE_BYTES // len(body)
    rest = pull(ready)  # the ones over the cap were handed back at once
    assert sorted(m["message"]["messageId"] for m in first + rest) == sorted(ids)


def test_requests_per_pull_and_ack(ready: Services) -> None:
    """A full pull is ReceiveMessage calls only, and its ack DeleteMessageBatch calls only: no lease item."""
    publish(ready, *(b"m%d" % i for i in range(100)))
    FanOut(ready.ctx).handle(stream_event(ready))
    pull(ready, 1)  # warm: the subscription cache and the hourly activity mark
    calls: list[str] = []
    for service in ("dynamodb", "sqs", "s3"):
        aws.client(service, ready.ctx.config).meta.events.register(
            "before-call.*.*", lambda model, **_: calls.append(model.name))
    got = pull(ready, 100)
    pulled, calls[:] = list(calls), []
    ready.pull.acknowledge(sub(), acknowledge_request({"ackIds": [m["ackId"] for m in got]}))
    print(f"pull of {len(got)}: {pulled}; ack: {calls}")
    assert len(got) == 99 and len(pulled) <= 11
    # GetItem: the subscription record, when the metadata cache has expired in between.
    assert set(pulled) <= {"ReceiveMessage", "GetItem"} and pulled.count("GetItem") <= 1
    assert [c for c in calls if c != "GetItem"] == ["DeleteMessageBatch"] * 10 and calls.count("GetItem") <= 1
