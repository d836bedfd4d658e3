"""Seek and snapshots through google-cloud-pubsub (REST transport) against the real local stack."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.protobuf import field_mask_pb2
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage

from tests.e2e.google_helpers import PROJECT, google_status, pull_n, pull_nothing

pytestmark = pytest.mark.e2e


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def publish(gapic: GapicPublisher, topic: str, *datas: str) -> list[str]:
    return list(gapic.publish(topic=topic, messages=[PubsubMessage(data=d.encode()) for d in datas]).message_ids)


def receive_all(subscriber: pubsub_v1.SubscriberClient, sub: str, n: int, ack: bool = True) -> list[str]:
    got = pull_n(subscriber, sub, n)
    if ack:
        subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got])
    return sorted(m.message.data.decode() for m in got)


@pytest.fixture
def retaining(subscriber: pubsub_v1.SubscriberClient, topic: str, unique: str) -> str:
    name = f"projects/{PROJECT}/subscriptions/r-{unique}"
    subscriber.create_subscription(request={"name": name, "topic": topic, "retain_acked_messages": True})
    return name


def test_seek_back_receives_exactly_the_retained_set_again(subscriber: pubsub_v1.SubscriberClient,
                                                           gapic: GapicPublisher, topic: str, retaining: str) -> None:
    publish(gapic, topic, "a", "b")
    middle = now()
    publish(gapic, topic, "c", "d")
    assert receive_all(subscriber, retaining, 4) == ["a", "b", "c", "d"]
    pull_nothing(subscriber, retaining)
    subscriber.seek(request={"subscription": retaining, "time": middle})
    assert receive_all(subscriber, retaining, 2) == ["c", "d"]
    pull_nothing(subscriber, retaining)


def test_seek_forward_drops_the_backlog(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                        topic: str, sub: str) -> None:
    publish(gapic, topic, "old-1", "old-2")
    subscriber.seek(request={"subscription": sub, "time": now() + datetime.timedelta(seconds=1)})
    pull_nothing(subscriber, sub)
    publish(gapic, topic, "new")
    assert receive_all(subscriber, sub, 1) == ["new"]


def test_snapshot_ack_seek_restores_unacked_plus_later(subscriber: pubsub_v1.SubscriberClient,
                                                       publisher: pubsub_v1.PublisherClient, gapic: GapicPublisher,
                                                       topic: str, sub: str, unique: str) -> None:
    publish(gapic, topic, "acked")
    assert receive_all(subscriber, sub, 1) == ["acked"]
    publish(gapic, topic, "unacked")
    snap_name = f"projects/{PROJECT}/snapshots/snap-{unique}"
    snap = subscriber.create_snapshot(request={"name": snap_name, "subscription": sub, "labels": {"team": "a"}})
    assert snap.topic == topic and dict(snap.labels) == {"team": "a"}
    assert snap.expire_time > now() + datetime.timedelta(days=6)
    publish(gapic, topic, "later")
    assert receive_all(subscriber, sub, 2) == ["later", "unacked"]
    subscriber.seek(request={"subscription": sub, "snapshot": snap_name})
    assert receive_all(subscriber, sub, 2) == ["later", "unacked"]
    pull_nothing(subscriber, sub)
    # listed per project and per topic, labels patched, then deleted
    assert snap_name in [s.name for s in subscriber.list_snapshots(request={"project": f"projects/{PROJECT}"})]
    assert list(publisher.list_topic_snapshots(request={"topic": topic})) == [snap_name]
    patched = subscriber.update_snapshot(request={"snapshot": {"name": snap_name, "labels": {"team": "b"}},
                                                  "update_mask": field_mask_pb2.FieldMask(paths=["labels"])})
    assert dict(patched.labels) == {"team": "b"}
    assert dict(subscriber.get_snapshot(request={"snapshot": snap_name}).labels) == {"team": "b"}
    subscriber.delete_snapshot(request={"snapshot": snap_name})
    with pytest.raises(gexc.NotFound):
        subscriber.get_snapshot(request={"snapshot": snap_name})


def test_snapshot_errors(subscriber: pubsub_v1.SubscriberClient, publisher: pubsub_v1.PublisherClient,
                         topic: str, sub: str, unique: str, stack: Any) -> None:
    snap_name = f"projects/{PROJECT}/snapshots/e-{unique}"
    with pytest.raises(gexc.NotFound) as missing_sub:
        subscriber.create_snapshot(request={"name": snap_name, "subscription": sub + "-missing"})
    assert google_status(missing_sub.value) == "NOT_FOUND"
    subscriber.create_snapshot(request={"name": snap_name, "subscription": sub})
    with pytest.raises(gexc.Conflict) as exists:
        subscriber.create_snapshot(request={"name": snap_name, "subscription": sub})
    assert google_status(exists.value) == "ALREADY_EXISTS"
    with pytest.raises(gexc.NotFound):
        subscriber.seek(request={"subscription": sub, "snapshot": snap_name + "-missing"})
    other_topic = topic + "-other"
    publisher.create_topic(name=other_topic)
    other_sub = sub + "-other"
    subscriber.create_subscription(name=other_sub, topic=other_topic)
    with pytest.raises(gexc.BadRequest) as wrong_topic:
        subscriber.seek(request={"subscription": other_sub, "snapshot": snap_name})
    assert google_status(wrong_topic.value) == "FAILED_PRECONDITION"
    answer = requests.post(f"{stack.url}/v1/{sub}:seek", json={}, timeout=10)
    assert answer.status_code == 400 and answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    with pytest.raises(gexc.BadRequest):
        subscriber.create_snapshot(request={"name": f"projects/{PROJECT}/snapshots/goog-x", "subscription": sub})


def test_seek_of_10000_messages(subscriber: pubsub_v1.SubscriberClient, publisher: pubsub_v1.PublisherClient,
                                gapic: GapicPublisher, unique: str, stack: Any) -> None:
    """A topic keeping a day of messages: a subscription created afterwards seeks back to before it existed."""
    topic = f"projects/{PROJECT}/topics/big-{unique}"
    publisher.create_topic(request={"name": topic, "message_retention_duration": {"seconds": 86400}})
    ids: list[str] = []
    for start in range(0, 10_000, 1000):
        ids += publish(gapic, topic, *(str(i) for i in range(start, start + 1000)))
    sub = f"projects/{PROJECT}/subscriptions/big-{unique}"
    subscriber.create_subscription(name=sub, topic=topic)
    pull_nothing(subscriber, sub)
    subscriber.seek(request={"subscription": sub, "time": now() - datetime.timedelta(hours=1)})
    metrics = requests.get(f"{stack.url}/v1/{sub}:metrics", timeout=30).json()["metrics"]
    [backlog] = [m for m in metrics if m["metric"] == "subscription.number_of_undelivered_messages"]
    assert backlog["timeseries"][0]["value"] == 10_000
    sample = pull_n(subscriber, sub, 100, max_messages=100)  # moto's SQS is slow to drain deep queues
    assert {m.message.message_id for m in sample} <= set(ids)
    assert all(m.message.data.decode() == str(ids.index(m.message.message_id)) for m in sample)
    subscriber.delete_subscription(subscription=sub)
