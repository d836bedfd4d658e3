"""google-cloud-pubsub (REST transport) against the real local stack: administration of topics and subscriptions."""

from __future__ import annotations

import pytest
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage

from tests.e2e.google_helpers import DELETED_TOPIC, google_status, pull_n, sub_path, topic_path

pytestmark = pytest.mark.e2e


def test_topic_create_get_update_delete(publisher: pubsub_v1.PublisherClient, unique: str) -> None:
    name = topic_path(f"t-{unique}")
    created = publisher.create_topic(request={"name": name, "labels": {"team": "metro"}})
    assert created.name == name
    assert dict(created.labels) == {"team": "metro"}
    assert publisher.get_topic(topic=name).name == name

    updated = publisher.update_topic(request={"topic": {"name": name, "labels": {"env": "e2e", "x": "y"}},
                                              "update_mask": {"paths": ["labels"]}})
    assert dict(updated.labels) == {"env": "e2e", "x": "y"}
    assert dict(publisher.get_topic(topic=name).labels) == {"env": "e2e", "x": "y"}

    with pytest.raises(gexc.BadRequest) as err:  # no update mask
        publisher.update_topic(request={"topic": {"name": name, "labels": {"a": "b"}}})
    assert google_status(err.value) == "INVALID_ARGUMENT"

    publisher.delete_topic(topic=name)
    with pytest.raises(gexc.NotFound) as missing:
        publisher.get_topic(topic=name)
    assert google_status(missing.value) == "NOT_FOUND"
    with pytest.raises(gexc.NotFound):
        publisher.delete_topic(topic=name)


def test_list_topics_pages(publisher: pubsub_v1.PublisherClient, unique: str) -> None:
    project = f"p-{unique}"  # a project of its own, so the listing is exact
    names = sorted(topic_path(f"t{i}-{unique}", project) for i in range(5))
    for name in names:
        publisher.create_topic(name=name)
    pager = publisher.list_topics(request={"project": f"projects/{project}", "page_size": 2})
    pages = [[t.name for t in page.topics] for page in pager.pages]
    assert all(len(page) <= 2 for page in pages)
    assert len([p for p in pages if p]) == 3
    assert sorted(n for page in pages for n in page) == names
    # The plain iterator walks the page tokens too.
    assert sorted(t.name for t in publisher.list_topics(request={"project": f"projects/{project}",
                                                                 "page_size": 1})) == names


def test_list_topic_subscriptions(publisher: pubsub_v1.PublisherClient, subscriber: pubsub_v1.SubscriberClient,
                                  topic: str, unique: str) -> None:
    subs = sorted(sub_path(f"s{i}-{unique}") for i in range(3))
    for name in subs:
        subscriber.create_subscription(name=name, topic=topic)
    assert sorted(publisher.list_topic_subscriptions(topic=topic)) == subs
    paged = publisher.list_topic_subscriptions(request={"topic": topic, "page_size": 2})
    assert sorted(paged) == subs
    with pytest.raises(gexc.NotFound):
        list(publisher.list_topic_subscriptions(topic=topic_path(f"missing-{unique}")))


def test_subscription_create_get_update_list_delete(publisher: pubsub_v1.PublisherClient,
                                                     subscriber: pubsub_v1.SubscriberClient, unique: str) -> None:
    project = f"p-{unique}"
    topic = topic_path(f"t-{unique}", project)
    publisher.create_topic(name=topic)
    name = sub_path(f"s-{unique}", project)
    created = subscriber.create_subscription(request={"name": name, "topic": topic, "ack_deadline_seconds": 20,
                                                      "labels": {"a": "1"}})
    assert (created.name, created.topic, created.ack_deadline_seconds) == (name, topic, 20)
    assert created.message_retention_duration.total_seconds() == 7 * 24 * 3600
    assert created.state == created.State.ACTIVE

    got = subscriber.get_subscription(subscription=name)
    assert (got.name, got.topic, got.ack_deadline_seconds, dict(got.labels)) == (name, topic, 20, {"a": "1"})

    updated = subscriber.update_subscription(request={
        "subscription": {"name": name, "ack_deadline_seconds": 45, "labels": {"b": "2"}},
        "update_mask": {"paths": ["ack_deadline_seconds", "labels"]},
    })
    assert (updated.ack_deadline_seconds, dict(updated.labels)) == (45, {"b": "2"})
    assert subscriber.get_subscription(subscription=name).ack_deadline_seconds == 45

    others = [sub_path(f"s{i}-{unique}", project) for i in range(3)]
    for other in others:
        subscriber.create_subscription(name=other, topic=topic)
    pager = subscriber.list_subscriptions(request={"project": f"projects/{project}", "page_size": 2})
    pages = [[s.name for s in page.subscriptions] for page in pager.pages]
    assert all(len(page) <= 2 for page in pages)
    assert sorted(n for page in pages for n in page) == sorted([name, *others])

    subscriber.delete_subscription(subscription=name)
    with pytest.raises(gexc.NotFound) as err:
        subscriber.get_subscription(subscription=name)
    assert google_status(err.value) == "NOT_FOUND"
    assert sorted(publisher.list_topic_subscriptions(topic=topic)) == sorted(others)


def test_admin_errors(publisher: pubsub_v1.PublisherClient, subscriber: pubsub_v1.SubscriberClient,
                      topic: str, sub: str, unique: str) -> None:
    with pytest.raises(gexc.Conflict) as dup:
        publisher.create_topic(name=topic)
    assert google_status(dup.value) == "ALREADY_EXISTS"
    with pytest.raises(gexc.Conflict) as dup_sub:
        subscriber.create_subscription(name=sub, topic=topic)
    assert google_status(dup_sub.value) == "ALREADY_EXISTS"

    with pytest.raises(gexc.NotFound):
        publisher.get_topic(topic=topic_path(f"missing-{unique}"))
    with pytest.raises(gexc.NotFound):  # a subscription to a missing topic
        subscriber.create_subscription(name=sub_path(f"s2-{unique}"), topic=topic_path(f"missing-{unique}"))
    with pytest.raises(gexc.NotFound):
        subscriber.get_subscription(subscription=sub_path(f"missing-{unique}"))

    for bad in ("1starts-with-digit", "ab", "goog-reserved", "has space", "x" * 256, "ünïcode"):
        with pytest.raises(gexc.BadRequest) as err:
            publisher.create_topic(name=topic_path(bad))
        assert google_status(err.value) == "INVALID_ARGUMENT", bad
    with pytest.raises(gexc.BadRequest):
        subscriber.create_subscription(name=sub_path("ab"), topic=topic)
    with pytest.raises(gexc.BadRequest):
        subscriber.create_subscription(name=sub_path(f"s3-{unique}"), topic="not/a/topic/name")
    with pytest.raises(gexc.BadRequest):
        subscriber.create_subscription(name=sub_path(f"s4-{unique}"), topic=topic, ack_deadline_seconds=5)


def test_special_characters_in_names(publisher: pubsub_v1.PublisherClient, subscriber: pubsub_v1.SubscriberClient,
                                     gapic: GapicPublisher, unique: str) -> None:
    # The REST transport percent-encodes '+' and '%'; the server must decode exactly once.
    topic = topic_path(f"t+{unique}~x%41y.z_")
    sub = sub_path(f"s+{unique}~x%25y%")
    assert publisher.create_topic(name=topic).name == topic
    assert publisher.get_topic(topic=topic).name == topic
    assert subscriber.create_subscription(name=sub, topic=topic).topic == topic
    assert subscriber.get_subscription(subscription=sub).name == sub
    assert list(publisher.list_topic_subscriptions(topic=topic)) == [sub]
    gapic.publish(topic=topic, messages=[PubsubMessage(data=b"special")])
    [msg] = pull_n(subscriber, sub, 1)
    assert msg.message.data == b"special"
    subscriber.acknowledge(subscription=sub, ack_ids=[msg.ack_id])
    subscriber.delete_subscription(subscription=sub)
    publisher.delete_topic(topic=topic)
    with pytest.raises(gexc.NotFound):
        publisher.get_topic(topic=topic)


def test_deleted_topic_leaves_subscription(publisher: pubsub_v1.PublisherClient,
                                           subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                           topic: str, sub: str) -> None:
    gapic.publish(topic=topic, messages=[PubsubMessage(data=b"before delete")])
    # Wait until fan-out has delivered it (see the report: a publish racing the delete can be lost).
    [held] = pull_n(subscriber, sub, 1)
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[held.ack_id], ack_deadline_seconds=0)
    publisher.delete_topic(topic=topic)
    assert subscriber.get_subscription(subscription=sub).topic == DELETED_TOPIC
    with pytest.raises(gexc.NotFound):
        gapic.publish(topic=topic, messages=[PubsubMessage(data=b"after delete")])
    # The backlog of the subscription survives its topic.
    [msg] = pull_n(subscriber, sub, 1)
    assert msg.message.data == b"before delete"
    subscriber.acknowledge(subscription=sub, ack_ids=[msg.ack_id])
    # A new topic of the same name does not reattach the subscription.
    publisher.create_topic(name=topic)
    assert list(publisher.list_topic_subscriptions(topic=topic)) == []
    assert subscriber.get_subscription(subscription=sub).topic == DELETED_TOPIC


def test_deleted_subscription_answers_404(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                          topic: str, sub: str) -> None:
    gapic.publish(topic=topic, messages=[PubsubMessage(data=b"x")])
    [msg] = pull_n(subscriber, sub, 1)
    subscriber.delete_subscription(subscription=sub)
    with pytest.raises(gexc.NotFound):
        subscriber.get_subscription(subscription=sub)
    with pytest.raises(gexc.NotFound):
        subscriber.pull(subscription=sub, max_messages=1, return_immediately=True)
    with pytest.raises(gexc.NotFound):
        subscriber.acknowledge(subscription=sub, ack_ids=[msg.ack_id])
    with pytest.raises(gexc.NotFound):
        subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=0)
    with pytest.raises(gexc.NotFound):
        subscriber.delete_subscription(subscription=sub)
