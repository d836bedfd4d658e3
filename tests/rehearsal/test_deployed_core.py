"""The core path of the deployed artifact through API Gateway: publish, pull, acknowledge, redelivery, a body
stored in S3, fan-out by the fan-out function on the messages table's stream mapping, and the maintenance
function."""

from __future__ import annotations

import json
from typing import Any

import boto3

from chalicelib.config import Config
from tests.e2e.google_helpers import assert_drained, pull_n, pull_nothing
from tests.rehearsal.conftest import PROJECT, Deployed


def publish(gapic: Any, topic: str, *messages: dict[str, Any]) -> list[str]:
    from google.pubsub_v1 import PubsubMessage

    return list(gapic.publish(topic=topic, messages=[PubsubMessage(**m) for m in messages]).message_ids)


def fanout_failures_url(deployed: Deployed) -> str:
    """The fan-out DLQ of the app stack deployed last (each stack names its own: they outlive a destroy)."""
    found = boto3.client("cloudformation").describe_stacks(StackName=deployed.names.app_stack)["Stacks"][0]
    return str({o["OutputKey"]: o["OutputValue"] for o in found["Outputs"]}["FanoutFailuresQueueUrl"])


def scheduled_event(**detail: Any) -> dict[str, Any]:
    """What the maintenance schedule sends (at the top of an hour), with ``detail`` as given."""
    return {"version": "0", "id": "rehearsal", "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "000000000000", "time": "2026-01-01T00:00:00Z", "region": "us-east-1", "resources": [],
            "detail": detail}


def invoke_maintenance(deployed: Deployed, **detail: Any) -> dict[str, Any]:
    answer = boto3.client("lambda").invoke(FunctionName=deployed.names.function("maintenance"),
                                           Payload=json.dumps(scheduled_event(**detail)).encode())
    result = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer, result
    return dict(result)


def test_publish_pull_acknowledge(gapic: Any, subscriber: Any, topic: str, sub: str) -> None:
    sent = publish(gapic, topic, *({"data": f"m{i}".encode(), "attributes": {"i": str(i)}} for i in range(10)))
    got = pull_n(subscriber, sub, 10)
    assert sorted(m.message.message_id for m in got) == sorted(sent)
    assert {m.message.data: dict(m.message.attributes) for m in got} == {
        f"m{i}".encode(): {"i": str(i)} for i in range(10)}
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got])
    assert_drained(subscriber, gapic, topic, [sub])


def test_a_nacked_message_comes_back_and_a_large_body_travels_through_s3(gapic: Any, subscriber: Any, topic: str,
                                                                         sub: str) -> None:
    body = bytes(range(256)) * 400  # 100 KiB: over the inline limit, so the body is read from the bucket
    assert len(body) > Config().inline_max_bytes
    [sent] = publish(gapic, topic, {"data": body})
    [first] = pull_n(subscriber, sub, 1)
    assert first.message.message_id == sent and first.message.data == body
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[first.ack_id], ack_deadline_seconds=0)
    [again] = pull_n(subscriber, sub, 1)
    assert again.message.message_id == sent and again.message.data == body
    subscriber.acknowledge(subscription=sub, ack_ids=[again.ack_id])
    pull_nothing(subscriber, sub)


def test_fan_out_through_the_stream_mapping(deployed: Deployed, gapic: Any, publisher: Any, subscriber: Any,
                                            unique: str) -> None:
    """A topic with more subscriptions than publish fans out itself: the fan-out function, fed by the stream
    mapping of the deployed template, enqueues the message for every subscription."""
    function = boto3.client("lambda").get_function_configuration(FunctionName=deployed.names.function("api_handler"))
    assert "METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS" not in function["Environment"]["Variables"]
    count = Config().direct_fanout_max_subscriptions + 1
    topic = publisher.create_topic(name=f"projects/{PROJECT}/topics/fan-{unique}").name
    subs = [f"projects/{PROJECT}/subscriptions/fan-{unique}-{i}" for i in range(count)]
    for name in subs:
        subscriber.create_subscription(name=name, topic=topic)
    [sent] = publish(gapic, topic, {"data": b"to every subscription"})
    for name in subs:
        [got] = pull_n(subscriber, name, 1, timeout=30)
        assert got.message.message_id == sent
        subscriber.acknowledge(subscription=name, ack_ids=[got.ack_id])
    failures = boto3.client("sqs").get_queue_attributes(
        QueueUrl=fanout_failures_url(deployed), AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert failures["ApproximateNumberOfMessages"] == "0"


def test_the_scheduled_maintenance_function_runs(deployed: Deployed, sub: str) -> None:
    """Invoked with the event its schedule sends at the top of an hour: the dead-letter sweep, stalled seeks and the
    idle expiry run, and none of the fresh subscriptions expires."""
    result = invoke_maintenance(deployed)
    assert result == {"expired": [], "deadLettered": 0, "fannedOut": 0, "seeks_resumed": 0, "imported_objects": 0}
