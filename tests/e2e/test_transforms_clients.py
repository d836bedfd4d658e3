"""Message transforms through the real clients against the local stack: google-cloud-pubsub on REST and on gRPC
creates a topic and a subscription with ``types.MessageTransform`` (JavaScript UDFs), publishes, and pulls what the
transforms made: rewritten at publish, rewritten and filtered at delivery, dropped at publish. A UDF that does not
compile is refused at create; one that throws refuses the publish. google-api-python-client's discovery document
carries the same fields."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import types

from tests.e2e import google_helpers
from tests.stack import RunningStack

pytestmark = pytest.mark.e2e
PROJECT = "transforms-e2e"
# Google's examples' shapes: rewrite the data and add an attribute at publish; drop by an attribute at delivery
AT_PUBLISH = ("stamp", """function stamp(message, metadata) {
  if (message.attributes.drop === "publish") { return null; }
  return {data: message.data.toUpperCase(), attributes: Object.assign({}, message.attributes, {stamped: "yes"})};
}""")
AT_DELIVERY = ("tag", """function tag(message, metadata) {
  if (message.attributes.drop === "delivery") { return null; }
  message.attributes.key = metadata.ordering_key || "none";
  return {data: message.data + "!", attributes: message.attributes};
}""")


def udf(pair: tuple[str, str]) -> types.MessageTransform:
    return types.MessageTransform(javascript_udf=types.JavaScriptUDF(function_name=pair[0], code=pair[1]))


@pytest.fixture(scope="module")
def grpc_clients(stack: RunningStack) -> tuple[Any, Any]:
    return google_helpers.grpc_clients(stack.host)


def clients(transport: str, client_options: dict[str, str], grpc_clients: tuple[Any, Any]) -> tuple[Any, Any]:
    if transport == "grpc":
        return grpc_clients
    return (pubsub_v1.PublisherClient(transport="rest", client_options=client_options,
                                      credentials=AnonymousCredentials()),
            pubsub_v1.SubscriberClient(transport="rest", client_options=client_options,
                                       credentials=AnonymousCredentials()))


def pull_all(subscriber: Any, sub: str, want: int) -> list[Any]:
    got: list[Any] = []
    for _ in range(20):  # bounded: a pull waits for messages
        resp = subscriber.pull(request={"subscription": sub, "max_messages": 10}, timeout=30)
        got += [m.message for m in resp.received_messages]
        if resp.received_messages:
            subscriber.acknowledge(request={"subscription": sub, "ack_ids": [m.ack_id for m in resp.received_messages]})
        if len(got) >= want:
            break
    return got


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_transforms_at_publish_and_at_delivery(transport: str, client_options: dict[str, str],
                                               grpc_clients: tuple[Any, Any], unique: str) -> None:
    publisher, subscriber = clients(transport, client_options, grpc_clients)
    topic = f"projects/{PROJECT}/topics/{transport}-{unique}"
    sub = f"projects/{PROJECT}/subscriptions/{transport}-{unique}"
    made = publisher.create_topic(request={"name": topic, "message_transforms": [udf(AT_PUBLISH)]})
    assert made.message_transforms[0].javascript_udf.function_name == "stamp"
    subscriber.create_subscription(request={"name": sub, "topic": topic,
                                            "message_transforms": [udf(AT_DELIVERY)]})
    futures = [publisher.publish(topic, b"keep me"),
               publisher.publish(topic, b"gone at publish", drop="publish"),
               publisher.publish(topic, b"gone at delivery", drop="delivery")]
    ids = [f.result(timeout=30) for f in futures]
    assert len(set(ids)) == 3  # a dropped message still gets its id
    got = pull_all(subscriber, sub, 1)
    assert [(m.data, dict(m.attributes)) for m in got] == [(b"KEEP ME!", {"stamped": "yes", "key": "none"})]
    again = subscriber.pull(request={"subscription": sub, "max_messages": 10, "return_immediately": True})
    assert list(again.received_messages) == []  # the one dropped at delivery was acknowledged


def test_refusals_through_the_client(grpc_clients: tuple[Any, Any], unique: str) -> None:
    publisher, _ = grpc_clients
    with pytest.raises(gexc.InvalidArgument, match="does not compile"):
        publisher.create_topic(request={"name": f"projects/{PROJECT}/topics/bad-{unique}",
                                        "message_transforms": [udf(("f", "function f(m) {"))]})
    topic = f"projects/{PROJECT}/topics/throws-{unique}"
    publisher.create_topic(request={"name": topic, "message_transforms": [
        udf(("f", "function f(m) { throw new Error('no ' + m.data); }"))]})
    with pytest.raises(gexc.InvalidArgument, match="no hello"):
        publisher.api.publish(request={"topic": topic, "messages": [{"data": b"hello"}]})


def test_discovery_document_carries_message_transforms(discovery: Any, unique: str) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic, sub = f"projects/{PROJECT}/topics/d-{unique}", f"projects/{PROJECT}/subscriptions/d-{unique}"
    code = "function up(m) { return {data: m.data.toUpperCase()}; }"
    made = topics.create(name=topic, body={"messageTransforms": [
        {"javascriptUdf": {"functionName": "up", "code": code}}]}).execute()
    assert made["messageTransforms"][0]["javascriptUdf"]["functionName"] == "up"
    subs.create(name=sub, body={"topic": topic}).execute()
    topics.publish(topic=topic, body={"messages": [{"data": "aGk=", "attributes": {"a": "1"}}]}).execute()
    got = subs.pull(subscription=sub, body={"maxMessages": 10}).execute()
    [message] = [r["message"] for r in got["receivedMessages"]]
    assert message["data"] == "SEk=" and message["attributes"] == {"a": "1"}  # no attributes returned: kept
