"""Single message transforms over moto: validated at create and update, applied at publish (before the schema) and
at delivery (dropped = acknowledged, a failure = the dead-letter path), with packs and exactly-once."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
from typing import Any

import pytest

from chalicelib.api.parsing import (
    publish_request,
    subscription_request,
    topic_request,
    update_subscription_request,
    update_topic_request,
)
from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.schemas.model import SchemaSpec, SchemaType
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock

pytestmark = pytest.mark.functional

_n = itertools.count()

# Google's SMT pages' shapes: rewrite data, set an attribute, drop by content.
UPPER = {"javascriptUdf": {"functionName": "upper", "code":
                           "function upper(message, metadata) { return {data: message.data.toUpperCase(), "
                           "attributes: {...message.attributes, id: metadata.message_id}}; }"}}
DROP_SECRET = {"javascriptUdf": {"functionName": "drop", "code":
                                 "function drop(message, metadata) { "
                                 "return message.data.includes('secret') ? null : message; }"}}
THROW_ON_BAD = {"javascriptUdf": {"functionName": "check", "code":
                                  "function check(message, metadata) { if (message.data.startsWith('bad')) "
                                  "throw new Error('refused: ' + message.data); return message; }"}}
STRIP = {"javascriptUdf": {"functionName": "strip", "code":
                           "function strip(message) { return {data: message.data, attributes: {}}; }"}}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _names() -> tuple[names.Name, names.Name]:
    n = next(_n)
    return names.Name("smt", "topics", f"topic-{n}"), names.Name("smt", "subscriptions", f"sub-{n}")


def _setup(services: Services, topic_transforms: list[Any] | None = None, sub_transforms: list[Any] | None = None,
           **sub: Any) -> tuple[names.Name, names.Name]:
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    topic, name = _names()
    services.admin.create_topic(topic, topic_request({"messageTransforms": topic_transforms or []}, topic))
    services.admin.create_subscription(name, subscription_request(
        {"topic": topic.path, "messageTransforms": sub_transforms or [], **sub}, name))
    return topic, name


def _publish(services: Services, topic: names.Name, texts: list[str], **attrs: str) -> list[str]:
    msgs = [{"data": _b64(t), "attributes": attrs} for t in texts]
    return list(services.publish.publish(topic, publish_request({"messages": msgs})).message_ids)


def _pull_all(services: Services, sub: names.Name) -> list[Any]:
    got: list[Any] = []
    for _ in range(20):
        batch = services.pull.pull(sub, PullRequest(1000, True)).received
        if not batch:
            break
        got += batch
    return got


def _queue_counts(services: Services, sub: names.Name) -> tuple[str, str]:
    rec = services.ctx.resources.require_subscription(sub)
    attrs = aws.client("sqs", services.ctx.config).get_queue_attributes(
        QueueUrl=rec.queue_url, AttributeNames=["ApproximateNumberOfMessages",
                                                "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return attrs["ApproximateNumberOfMessages"], attrs["ApproximateNumberOfMessagesNotVisible"]


# -- validation --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("udf", "says"), [
    ({"functionName": "f", "code": "function f(m, x) { return m"}, "does not compile"),
    ({"functionName": "g", "code": "function f(m, x) { return m; }"}, "no function named 'g'"),
    ({"functionName": "f", "code": "var f = 1;"}, "no function named 'f'"),
    ({"functionName": "f", "code": "x" * 20_001}, "larger than"),
])
def test_a_bad_udf_is_refused_at_create_of_a_topic_and_a_subscription(services: Services, udf: dict[str, str],
                                                                       says: str) -> None:
    topic, sub = _names()
    with pytest.raises(InvalidArgument, match=says):
        services.admin.create_topic(topic, topic_request({"messageTransforms": [{"javascriptUdf": udf}]}, topic))
    services.admin.create_topic(topic, Topic())
    with pytest.raises(InvalidArgument, match=says):
        services.admin.create_subscription(sub, subscription_request(
            {"topic": topic.path, "messageTransforms": [{"javascriptUdf": udf}]}, sub))


def test_more_than_five_transforms_are_refused(services: Services) -> None:
    topic, _ = _names()
    with pytest.raises(InvalidArgument, match="at most 5"):
        services.admin.create_topic(topic, topic_request({"messageTransforms": [UPPER] * 6}, topic))


def test_an_update_of_the_transforms_is_validated_and_applied(services: Services, clock: FakeClock) -> None:
    topic, sub = _setup(services)
    with pytest.raises(InvalidArgument, match="does not compile"):
        services.admin.patch_topic(topic, update_topic_request({"topic": {"messageTransforms": [
            {"javascriptUdf": {"functionName": "f", "code": "function f( {"}}]}, "updateMask": "messageTransforms"},
            topic))
    services.admin.patch_subscription(sub, update_subscription_request(
        {"subscription": {"messageTransforms": [UPPER]}, "updateMask": "messageTransforms"}, sub))
    clock.advance(1)
    ids = _publish(services, topic, ["hello"])
    [m] = _pull_all(services, sub)
    assert m.data == b"HELLO" and m.attributes == {"id": ids[0]}


# -- publish ------------------------------------------------------------------------------------------------
def test_topic_transforms_rewrite_and_drop_in_order_at_publish(services: Services, clock: FakeClock) -> None:
    topic, sub = _setup(services, [DROP_SECRET, UPPER, {**STRIP, "disabled": True}])
    clock.advance(1)
    ids = _publish(services, topic, ["one", "a secret", "three"], k="v")
    assert len(ids) == 3 and len(set(ids)) == 3  # a dropped message gets an id too
    got = _pull_all(services, sub)
    assert [(m.data, m.attributes) for m in got] == [(b"ONE", {"k": "v", "id": ""}), (b"THREE", {"k": "v", "id": ""})]
    assert {m.message_id for m in got} == {ids[0], ids[2]}


def test_a_transform_that_throws_refuses_the_publish(services: Services, clock: FakeClock) -> None:
    topic, sub = _setup(services, [THROW_ON_BAD])
    with pytest.raises(InvalidArgument, match="refused: bad one"):
        _publish(services, topic, ["good", "bad one"])
    assert _pull_all(services, sub) == []  # nothing of the refused request was stored


def test_all_dropped_at_publish_stores_nothing(services: Services, clock: FakeClock) -> None:
    topic, sub = _setup(services, [DROP_SECRET])
    assert len(_publish(services, topic, ["secret 1", "secret 2"])) == 2
    assert _pull_all(services, sub) == []


def test_the_transform_runs_before_the_schema_check(services: Services, clock: FakeClock) -> None:
    """A topic schema sees the transformed message: a UDF turning text into the schema's JSON passes."""
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    schema = names.make("smt", "schemas", f"schema-{next(_n)}")
    services.schemas.create(schema, SchemaSpec(SchemaType.AVRO, json.dumps(
        {"type": "record", "name": "R", "fields": [{"name": "v", "type": "string"}]})))
    topic, sub = _names()
    to_json = {"javascriptUdf": {"functionName": "j", "code":
                                 "function j(m) { return {data: JSON.stringify({v: m.data})}; }"}}
    services.admin.create_topic(topic, topic_request({"messageTransforms": [to_json], "schemaSettings": {
        "schema": schema.path, "encoding": "JSON"}}, topic))
    services.admin.create_subscription(sub, subscription_request({"topic": topic.path}, sub))
    _publish(services, topic, ["plain text"])
    [m] = _pull_all(services, sub)
    assert m.data == b'{"v":"plain text"}'


# -- delivery -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("exactly_once", [False, True])
def test_packs_rewritten_and_dropped_at_delivery_dropped_ones_are_acked(services: Services, clock: FakeClock,
                                                                         exactly_once: bool) -> None:
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    topic, sub = _setup(services, sub_transforms=[DROP_SECRET, UPPER], enableExactlyOnceDelivery=exactly_once)
    texts = [f"secret {i}" if i % 3 == 0 else f"m{i}" for i in range(25)]
    ids = _publish(services, topic, texts)
    got = _pull_all(services, sub)
    assert sorted(m.data for m in got) == sorted(t.upper().encode() for t in texts if "secret" not in t)
    assert {m.message_id for m in got} == {i for i, t in zip(ids, texts, strict=True) if "secret" not in t}
    assert all(m.attributes == {"id": m.message_id} for m in got)
    services.pull.acknowledge(sub, _ack(got))
    clock.advance(700)  # past every deadline: nothing comes back, the queue is empty
    assert _pull_all(services, sub) == []
    assert _queue_counts(services, sub) == ("0", "0")


def _ack(got: list[Any]) -> Any:
    from chalicelib.api.parsing import acknowledge_request

    return acknowledge_request({"ackIds": [m.ack_id for m in got]})


def test_a_failure_at_delivery_goes_to_the_dead_letter_topic(services: Services, clock: FakeClock) -> None:
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    dlq, dlq_sub = _names()
    services.admin.create_topic(dlq, Topic())
    services.admin.create_subscription(dlq_sub, subscription_request({"topic": dlq.path}, dlq_sub))
    topic, sub = _setup(services, sub_transforms=[THROW_ON_BAD], deadLetterPolicy={
        "deadLetterTopic": dlq.path, "maxDeliveryAttempts": 5})
    _publish(services, topic, ["good", "bad one"])
    got = _pull_all(services, sub)
    assert [m.data for m in got] == [b"good"]
    [dead] = _pull_all(services, dlq_sub)
    assert dead.data == b"bad one" and dead.attributes["CloudPubSubDeadLetterSourceSubscription"] == sub.id
    services.pull.acknowledge(sub, _ack(got))
    clock.advance(700)
    assert _pull_all(services, sub) == [] and _queue_counts(services, sub) == ("0", "0")


def test_a_failure_at_delivery_without_dead_letter_topic_is_redelivered(services: Services,
                                                                         clock: FakeClock) -> None:
    topic, sub = _setup(services, sub_transforms=[THROW_ON_BAD])
    _publish(services, topic, ["bad one"])
    assert _pull_all(services, sub) == []
    assert _queue_counts(services, sub) == ("1", "0")  # nacked: back in the queue


def test_subscription_without_transforms_never_runs_the_engine(services: Services, clock: FakeClock,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(batch: Any) -> Any:
        raise AssertionError("the transformer ran")

    monkeypatch.setattr(services.ctx.transformer, "run", refuse)
    topic, sub = _setup(services)
    _publish(services, topic, ["a", "b"])
    assert [m.data for m in _pull_all(services, sub)] == [b"a", b"b"]
