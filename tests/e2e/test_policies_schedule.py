"""expirationPolicy through the local schedule, and a dead-letter topic deleted later, on a stack of their own
(maintenance every second, dead-letter retries after 2 s). Idle time is simulated by backdating the
subscription's stored creation and activity times in the emulator."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1

from tests.stack import RunningStack, start_stack
from tests.webhooks import Webhook

pytestmark = pytest.mark.e2e
PROJECT = "e2e-schedule"
DAY = 86400


@pytest.fixture(scope="module")
def sched_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("sched") / "metro.log",
                          {"METRO_MAINTENANCE_INTERVAL": "1", "METRO_DEAD_LETTER_RETRY_SECONDS": "2"})
    yield running
    running.stop()


@pytest.fixture(scope="module")
def clients(sched_stack: RunningStack) -> tuple[Any, Any]:
    opts = {"api_endpoint": sched_stack.url}
    return (pubsub_v1.PublisherClient(transport="rest", client_options=opts, credentials=AnonymousCredentials()),
            pubsub_v1.SubscriberClient(transport="rest", client_options=opts, credentials=AnonymousCredentials()))


def _backdate(stack: RunningStack, sub_id: str, seconds: float) -> None:
    ddb = boto3.client("dynamodb", endpoint_url=stack.emulator_url, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    then = repr(time.time() - seconds)
    ddb.update_item(TableName="metro-resources", Key={"pk": {"S": f"project#{PROJECT}"}, "sk": {"S": f"sub#{sub_id}"}},
                    UpdateExpression="SET created = :t, active = :t", ExpressionAttributeValues={":t": {"N": then}})


def _exists(subscriber: Any, name: str) -> bool:
    try:
        subscriber.get_subscription(subscription=name)
        return True
    except gexc.NotFound:
        return False


def test_idle_subscriptions_are_deleted_by_the_schedule(sched_stack: RunningStack, clients: tuple[Any, Any]) -> None:
    publisher, subscriber = clients
    topic = f"projects/{PROJECT}/topics/exp"
    publisher.create_topic(name=topic)
    hook_server = Webhook()
    try:
        specs: dict[str, dict[str, Any]] = {
            "one-day": {"expiration_policy": {"ttl": {"seconds": DAY}}},
            "one-day-push": {"expiration_policy": {"ttl": {"seconds": DAY}},
                             "push_config": {"push_endpoint": hook_server.hook(204).url}},
            "default": {},
            "never": {"expiration_policy": {}},
            "young": {"expiration_policy": {"ttl": {"seconds": 2 * DAY}}},
        }
        for rid, spec in specs.items():
            subscriber.create_subscription(request={"name": f"projects/{PROJECT}/subscriptions/{rid}", "topic": topic,
                                                    **spec})
        assert subscriber.get_subscription(subscription=f"projects/{PROJECT}/subscriptions/default"
                                           ).expiration_policy.ttl.total_seconds() == 31 * DAY
        for rid in ("one-day", "one-day-push", "never", "young"):
            _backdate(sched_stack, rid, DAY + 60)
        _backdate(sched_stack, "default", 31 * DAY + 60)
        gone = {"one-day", "one-day-push", "default"}
        end = time.monotonic() + 20
        while time.monotonic() < end and any(_exists(subscriber, f"projects/{PROJECT}/subscriptions/{r}")
                                             for r in gone):
            time.sleep(0.5)
        left = {r for r in specs if _exists(subscriber, f"projects/{PROJECT}/subscriptions/{r}")}
        assert left == {"never", "young"}
        assert {s.rsplit("/", 1)[1] for s in publisher.list_topic_subscriptions(topic=topic)} == {"never", "young"}
    finally:
        hook_server.close()


def test_dead_letter_topic_deleted_later_keeps_the_message(sched_stack: RunningStack,
                                                           clients: tuple[Any, Any]) -> None:
    publisher, subscriber = clients
    topic, dlt = f"projects/{PROJECT}/topics/dl-src", f"projects/{PROJECT}/topics/dl-dead"
    sub, dead = f"projects/{PROJECT}/subscriptions/dl-src", f"projects/{PROJECT}/subscriptions/dl-dead"
    publisher.create_topic(name=topic)
    publisher.create_topic(name=dlt)
    subscriber.create_subscription(request={"name": sub, "topic": topic, "dead_letter_policy": {
        "dead_letter_topic": dlt, "max_delivery_attempts": 5}})
    publisher.publish(topic, b"orphan").result()
    publisher.delete_topic(topic=dlt)
    for attempt in range(1, 6):
        got: list[Any] = []
        end = time.monotonic() + 15
        while not got and time.monotonic() < end:
            got = list(subscriber.pull(subscription=sub, max_messages=1).received_messages)
        assert got and got[0].delivery_attempt == attempt
        subscriber.modify_ack_deadline(subscription=sub, ack_ids=[got[0].ack_id], ack_deadline_seconds=0)
    assert list(subscriber.pull(subscription=sub, max_messages=1).received_messages) == []  # parked
    log = sched_stack.log_path.read_text()
    assert '"DeadLetterTopicMissing":[1.0]' in log and f'"Subscription":"{sub}"' in log
    # The policy is mended: it names a topic that exists and has a subscription, made first (a message
    # forwarded to a topic before its subscription exists is not that subscription's, as in Google's).
    mended = f"projects/{PROJECT}/topics/dl-mended"
    publisher.create_topic(name=mended)
    subscriber.create_subscription(request={"name": dead, "topic": mended})
    subscriber.update_subscription(request={
        "subscription": {"name": sub, "dead_letter_policy": {"dead_letter_topic": mended,
                                                             "max_delivery_attempts": 5}},
        "update_mask": {"paths": ["dead_letter_policy"]}})
    got = []
    end = time.monotonic() + 30
    while not got and time.monotonic() < end:
        assert list(subscriber.pull(subscription=sub, max_messages=1, return_immediately=True).received_messages) == []
        got = list(subscriber.pull(subscription=dead, max_messages=1).received_messages)
    assert got and got[0].message.data == b"orphan"
    assert got[0].message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
