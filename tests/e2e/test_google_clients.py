"""The real Google client libraries against the real local stack, over HTTP.

- google-cloud-pubsub with ``transport="rest"`` (the GAPIC clients and the high-level publisher);
- google-api-python-client (the discovery-based client, with its bundled static discovery document).

Over REST, google-api-core maps errors by HTTP status, so INVALID_ARGUMENT arrives as
``BadRequest`` (400) and ALREADY_EXISTS as ``Conflict`` (409), exactly as against Google itself;
the gRPC status string is checked in the error body.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import google.auth.credentials
import googleapiclient.discovery
import googleapiclient.errors
import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage, ReceivedMessage

from tests.stack import RunningStack

pytestmark = pytest.mark.e2e

PROJECT = "e2e-project"
DELETED_TOPIC = "_deleted-topic_"


# -- fixtures and helpers ---------------------------------------------------------------------------


def _options(stack: RunningStack) -> dict[str, Any]:
    return {"api_endpoint": stack.url}  # an http:// endpoint keeps its scheme in the REST transport


@pytest.fixture(scope="module")
def publisher(stack: RunningStack) -> pubsub_v1.PublisherClient:
    return pubsub_v1.PublisherClient(transport="rest", client_options=_options(stack),
                                     credentials=AnonymousCredentials())


@pytest.fixture(scope="module")
def subscriber(stack: RunningStack) -> pubsub_v1.SubscriberClient:
    # Not closed: SubscriberClient.close() assumes a gRPC channel (AttributeError with transport="rest").
    return pubsub_v1.SubscriberClient(transport="rest", client_options=_options(stack),
                                      credentials=AnonymousCredentials())


@pytest.fixture(scope="module")
def gapic(stack: RunningStack) -> GapicPublisher:
    """The plain GAPIC publisher: one publish call is one PublishRequest, no client-side batching or checks."""
    return GapicPublisher(transport="rest", client_options=_options(stack), credentials=AnonymousCredentials())


@pytest.fixture(scope="module")
def discovery(stack: RunningStack) -> Any:
    return googleapiclient.discovery.build(
        "pubsub", "v1", static_discovery=True, credentials=google.auth.credentials.AnonymousCredentials(),
        client_options=_options(stack), cache_discovery=False,
    )


def topic_path(rid: str, project: str = PROJECT) -> str:
    return f"projects/{project}/topics/{rid}"


def sub_path(rid: str, project: str = PROJECT) -> str:
    return f"projects/{project}/subscriptions/{rid}"


def google_status(err: gexc.GoogleAPICallError) -> str:
    """The gRPC status string in the Google error body of a REST failure."""
    assert err.response is not None
    body = err.response.json()
    assert set(body["error"]) >= {"code", "message", "status"}
    assert body["error"]["code"] == err.code
    return str(body["error"]["status"])


def pull_n(subscriber: pubsub_v1.SubscriberClient, sub: str, n: int, timeout: float = 15.0,
           max_messages: int = 1000) -> list[ReceivedMessage]:
    """Pull until ``n`` messages arrived (fan-out is asynchronous); never acknowledges."""
    got: list[ReceivedMessage] = []
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        resp = subscriber.pull(subscription=sub, max_messages=min(max_messages, n - len(got)),
                               return_immediately=False)
        got.extend(resp.received_messages)
    assert len(got) == n, f"expected {n} messages on {sub}, got {len(got)}"
    return got


def pull_nothing(subscriber: pubsub_v1.SubscriberClient, sub: str) -> None:
    resp = subscriber.pull(subscription=sub, max_messages=10, return_immediately=True)
    assert list(resp.received_messages) == []


@pytest.fixture
def topic(publisher: pubsub_v1.PublisherClient, unique: str) -> str:
    name = topic_path(f"t-{unique}")
    publisher.create_topic(name=name)
    return name


@pytest.fixture
def sub(subscriber: pubsub_v1.SubscriberClient, topic: str, unique: str) -> str:
    name = sub_path(f"s-{unique}")
    subscriber.create_subscription(name=name, topic=topic)
    return name


# == google-cloud-pubsub, REST transport: administration =============================================


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


# == google-cloud-pubsub, REST transport: publish and pull ===========================================


@pytest.mark.parametrize("count", [1, 100])
def test_publish_returns_ids_in_order(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                      topic: str, sub: str, count: int) -> None:
    resp = gapic.publish(topic=topic, messages=[PubsubMessage(data=str(i).encode()) for i in range(count)])
    ids = list(resp.message_ids)
    assert len(ids) == count == len(set(ids))
    assert ids == sorted(ids, key=int)  # ids of one request sort in request order
    received = pull_n(subscriber, sub, count)
    by_id = {m.message.message_id: m.message.data for m in received}
    assert by_id == {mid: str(i).encode() for i, mid in enumerate(ids)}
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in received])


def test_publish_1000_in_one_request(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                     topic: str, sub: str) -> None:
    # Only a sample is pulled back: moto's ReceiveMessage scans the whole queue for every message it
    # returns, so draining a 1000-message backlog from the emulator takes about a minute.
    ids = list(gapic.publish(topic=topic, messages=[PubsubMessage(data=str(i).encode(), attributes={"i": str(i)})
                                                    for i in range(1000)]).message_ids)
    assert len(ids) == 1000 == len(set(ids))
    assert ids == sorted(ids, key=int)
    index = {mid: i for i, mid in enumerate(ids)}
    sample = pull_n(subscriber, sub, 10, max_messages=10)
    for m in sample:
        i = index[m.message.message_id]
        assert (m.message.data, dict(m.message.attributes)) == (str(i).encode(), {"i": str(i)})
    subscriber.delete_subscription(subscription=sub)


def test_publisher_client_batches_and_futures(publisher: pubsub_v1.PublisherClient,
                                              subscriber: pubsub_v1.SubscriberClient, topic: str, sub: str) -> None:
    futures = [publisher.publish(topic, f"m{i}".encode(), index=str(i)) for i in range(50)]
    ids = [f.result(timeout=30) for f in futures]
    assert len(set(ids)) == 50
    received = pull_n(subscriber, sub, 50)
    by_id = {m.message.message_id: m.message for m in received}
    for i, mid in enumerate(ids):
        assert by_id[mid].data == f"m{i}".encode()
        assert dict(by_id[mid].attributes) == {"index": str(i)}
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in received])


def test_binary_and_unicode_round_trip(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                       topic: str, sub: str) -> None:
    binary = bytes(range(256)) * 3
    text = "héllo wörld ✓ 日本語 🎉\u0000\u2028".encode()
    attrs = {"ключ": "значение", "emoji 😀": "値 🎉", "quote\"s": "back\\slash", "empty": ""}
    published = [PubsubMessage(data=binary), PubsubMessage(data=text, attributes=attrs),
                 PubsubMessage(attributes={"only": "attributes"}), PubsubMessage(data=b"\xff" * 60_000)]
    ids = list(gapic.publish(topic=topic, messages=published).message_ids)
    by_id = {m.message.message_id: m for m in pull_n(subscriber, sub, len(published))}
    for mid, sent in zip(ids, published):
        got = by_id[mid].message
        assert got.data == sent.data
        assert dict(got.attributes) == dict(sent.attributes)
        assert got.publish_time.timestamp() > 0
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in by_id.values()])


def test_large_message_round_trip(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                  topic: str, sub: str) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: stored outside the queue message
    gapic.publish(topic=topic, messages=[PubsubMessage(data=data, attributes={"k": "v"})])
    [msg] = pull_n(subscriber, sub, 1)
    assert msg.message.data == data
    subscriber.acknowledge(subscription=sub, ack_ids=[msg.ack_id])


def test_fan_out_to_three_subscriptions(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                        topic: str, unique: str) -> None:
    subs = [sub_path(f"fan{i}-{unique}") for i in range(3)]
    for name in subs:
        subscriber.create_subscription(name=name, topic=topic)
    ids = list(gapic.publish(topic=topic, messages=[PubsubMessage(data=f"f{i}".encode()) for i in range(5)])
               .message_ids)
    for name in subs:
        received = pull_n(subscriber, name, 5)
        assert sorted(m.message.message_id for m in received) == sorted(ids)
        subscriber.acknowledge(subscription=name, ack_ids=[m.ack_id for m in received])
        pull_nothing(subscriber, name)


def test_pull_max_messages_and_return_immediately(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                                  topic: str, sub: str) -> None:
    started = time.monotonic()
    pull_nothing(subscriber, sub)
    assert time.monotonic() - started < 1.5  # returnImmediately does not wait for the long poll
    gapic.publish(topic=topic, messages=[PubsubMessage(data=f"{i}".encode()) for i in range(6)])
    first = pull_n(subscriber, sub, 2, max_messages=2)
    resp = subscriber.pull(subscription=sub, max_messages=2, return_immediately=False)
    assert 1 <= len(resp.received_messages) <= 2
    rest = pull_n(subscriber, sub, 6 - 2 - len(resp.received_messages))
    held = [*first, *resp.received_messages, *rest]
    assert len({m.message.message_id for m in held}) == 6
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in held])


def test_ack_and_nack(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher, topic: str, sub: str) -> None:
    ids = list(gapic.publish(topic=topic, messages=[PubsubMessage(data=b"ack me"), PubsubMessage(data=b"nack me")])
               .message_ids)
    by_data = {m.message.data: m for m in pull_n(subscriber, sub, 2)}
    subscriber.acknowledge(subscription=sub, ack_ids=[by_data[b"ack me"].ack_id])
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[by_data[b"nack me"].ack_id], ack_deadline_seconds=0)
    # Only the nacked message comes back, at once.
    [again] = pull_n(subscriber, sub, 1)
    assert (again.message.message_id, again.message.data) == (ids[1], b"nack me")
    assert again.ack_id != by_data[b"nack me"].ack_id
    subscriber.acknowledge(subscription=sub, ack_ids=[again.ack_id])
    pull_nothing(subscriber, sub)


def test_redelivery_after_ack_deadline_expires(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                               topic: str, sub: str) -> None:
    [mid] = gapic.publish(topic=topic, messages=[PubsubMessage(data=b"expire me")]).message_ids
    [first] = pull_n(subscriber, sub, 1)
    # The minimum subscription deadline is 10 s; shorten this lease instead.
    shortened_at = time.monotonic()
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[first.ack_id], ack_deadline_seconds=2)
    pull_nothing(subscriber, sub)  # still leased
    [again] = pull_n(subscriber, sub, 1, timeout=8)
    assert time.monotonic() - shortened_at >= 1.5
    assert again.message.message_id == mid
    subscriber.acknowledge(subscription=sub, ack_ids=[again.ack_id])
    pull_nothing(subscriber, sub)


def test_modify_ack_deadline_extends_lease(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                           topic: str, sub: str) -> None:
    gapic.publish(topic=topic, messages=[PubsubMessage(data=b"keep")])
    [msg] = pull_n(subscriber, sub, 1)
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=60)
    pull_nothing(subscriber, sub)
    with pytest.raises(gexc.BadRequest):
        subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=601)
    subscriber.acknowledge(subscription=sub, ack_ids=[msg.ack_id])
    with pytest.raises(gexc.BadRequest) as err:
        subscriber.acknowledge(subscription=sub, ack_ids=["not-an-ack-id"])
    assert google_status(err.value) == "INVALID_ARGUMENT"


def test_two_pullers_never_hold_the_same_message(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                                 topic: str, sub: str) -> None:
    total = 40
    gapic.publish(topic=topic, messages=[PubsubMessage(data=f"{i}".encode()) for i in range(total)])
    lock = threading.Lock()
    held: dict[str, str] = {}  # message id -> puller holding it
    acked: list[str] = []
    overlaps: list[str] = []
    errors: list[BaseException] = []

    def puller(who: str) -> None:
        try:
            end = time.monotonic() + 20
            while time.monotonic() < end:
                with lock:
                    if len(acked) >= total:
                        return
                resp = subscriber.pull(subscription=sub, max_messages=4, return_immediately=False)
                mids = [m.message.message_id for m in resp.received_messages]
                with lock:
                    overlaps.extend(m for m in mids if m in held)
                    held.update({m: who for m in mids})
                time.sleep(0.05)  # work on them while the other puller pulls
                with lock:
                    for m in mids:
                        held.pop(m, None)
                    acked.extend(mids)
                if mids:
                    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in resp.received_messages])
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=puller, args=(w,)) for w in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert overlaps == []
    assert sorted(acked, key=int) == sorted(set(acked), key=int)  # no message was delivered twice
    assert len(acked) == total


def test_publish_errors(publisher: pubsub_v1.PublisherClient, gapic: GapicPublisher, topic: str,
                        unique: str) -> None:
    def status_of(messages: list[PubsubMessage], to: str = topic) -> str:
        with pytest.raises(gexc.GoogleAPICallError) as err:
            gapic.publish(topic=to, messages=messages)
        return google_status(err.value)

    assert status_of([PubsubMessage(data=b"x")], topic_path(f"missing-{unique}")) == "NOT_FOUND"
    assert status_of([PubsubMessage()]) == "INVALID_ARGUMENT"  # empty message
    assert status_of([PubsubMessage(data=b"x"), PubsubMessage()]) == "INVALID_ARGUMENT"
    assert status_of([PubsubMessage(data=b"x" * (10 * 1000 * 1000 + 1))]) == "INVALID_ARGUMENT"
    too_many = {f"k{i}": "v" for i in range(101)}
    assert status_of([PubsubMessage(data=b"x", attributes=too_many)]) == "INVALID_ARGUMENT"
    assert status_of([PubsubMessage(data=b"x", attributes={"goog-reserved": "v"})]) == "INVALID_ARGUMENT"
    assert status_of([PubsubMessage(data=b"x", attributes={"k" * 257: "v"})]) == "INVALID_ARGUMENT"
    assert status_of([PubsubMessage(data=b"x", attributes={"k": "v" * 1025})]) == "INVALID_ARGUMENT"
    assert status_of([PubsubMessage(data=b"x")] * 1001) == "INVALID_ARGUMENT"
    with pytest.raises(gexc.BadRequest):
        gapic.publish(topic=topic, messages=[])
    # The limits themselves are accepted.
    assert len(gapic.publish(topic=topic, messages=[PubsubMessage(data=b"x", attributes={
        f"k{i}": "v" * 1024 for i in range(100)})]).message_ids) == 1
    # The high-level client's futures carry the same errors.
    with pytest.raises(gexc.NotFound):
        publisher.publish(topic_path(f"missing2-{unique}"), b"x").result(timeout=30)


# == google-api-python-client (discovery) ============================================================


def _http_error(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(googleapiclient.errors.HttpError) as err:
        call.execute()
    body = json.loads(err.value.content)
    assert set(body) == {"error"}
    assert body["error"]["code"] == err.value.resp.status
    return err.value.resp.status, body["error"]


def test_discovery_publish_pull_ack(discovery: Any, unique: str) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic, sub = topic_path(f"dt-{unique}"), sub_path(f"ds-{unique}")
    assert topics.create(name=topic, body={"labels": {"via": "discovery"}}).execute() == {
        "name": topic, "labels": {"via": "discovery"}}
    created = subs.create(name=sub, body={"topic": topic, "ackDeadlineSeconds": 15}).execute()
    assert (created["name"], created["topic"], created["ackDeadlineSeconds"]) == (sub, topic, 15)

    ids = topics.publish(topic=topic, body={"messages": [
        {"data": "aGVsbG8=", "attributes": {"a": "1"}}, {"data": "d29ybGQ="}]}).execute()["messageIds"]
    assert len(ids) == 2
    received: list[dict[str, Any]] = []
    end = time.monotonic() + 15
    while len(received) < 2 and time.monotonic() < end:
        received += subs.pull(subscription=sub, body={"maxMessages": 10}).execute().get("receivedMessages", [])
    by_id = {r["message"]["messageId"]: r for r in received}
    assert set(by_id) == set(ids)
    assert by_id[ids[0]]["message"]["data"] == "aGVsbG8="
    assert by_id[ids[0]]["message"]["attributes"] == {"a": "1"}
    assert set(by_id[ids[1]]["message"]) == {"data", "messageId", "publishTime"}

    nack = by_id[ids[1]]["ackId"]
    assert subs.modifyAckDeadline(subscription=sub, body={"ackIds": [nack], "ackDeadlineSeconds": 0}).execute() == {}
    assert subs.acknowledge(subscription=sub, body={"ackIds": [by_id[ids[0]]["ackId"]]}).execute() == {}
    again = subs.pull(subscription=sub, body={"maxMessages": 10}).execute()["receivedMessages"]
    assert [r["message"]["messageId"] for r in again] == [ids[1]]
    subs.acknowledge(subscription=sub, body={"ackIds": [again[0]["ackId"]]}).execute()
    assert subs.pull(subscription=sub, body={"maxMessages": 10, "returnImmediately": True}).execute() == {}
    assert subs.delete(subscription=sub).execute() == {}
    assert topics.delete(topic=topic).execute() == {}


def test_discovery_list_pagination(discovery: Any, unique: str) -> None:
    project = f"projects/p-{unique}"
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    names = sorted(f"{project}/topics/top{i}" for i in range(5))
    for name in names:
        topics.create(name=name, body={}).execute()
    sub_names = sorted(f"{project}/subscriptions/sub{i}" for i in range(3))
    for name in sub_names:
        subs.create(name=name, body={"topic": names[0]}).execute()

    def walk(resource: Any, key: str, **kwargs: Any) -> list[Any]:
        seen: list[Any] = []
        request = resource.list(**kwargs)
        while request is not None:
            page = request.execute()
            assert len(page.get(key, [])) <= 2
            seen += page.get(key, [])
            request = resource.list_next(request, page)
        return seen

    assert sorted(t["name"] for t in walk(topics, "topics", project=project, pageSize=2)) == names
    assert sorted(s["name"] for s in walk(subs, "subscriptions", project=project, pageSize=2)) == sub_names
    listed = walk(topics.subscriptions(), "subscriptions", topic=names[0], pageSize=2)
    assert sorted(listed) == sub_names


def test_discovery_errors(discovery: Any, unique: str) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic = topic_path(f"dt-{unique}")
    topics.create(name=topic, body={}).execute()
    cases = [
        (topics.get(topic=topic_path(f"missing-{unique}")), 404, "NOT_FOUND"),
        (topics.create(name=topic, body={}), 409, "ALREADY_EXISTS"),
        (topics.create(name=topic_path("9starts-with-digit"), body={}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic, body={"messages": []}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic, body={"messages": [{}]}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic, body={"messages": [{"data": "not base64!"}]}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic_path(f"missing-{unique}"), body={"messages": [{"data": "eA=="}]}), 404,
         "NOT_FOUND"),
        (topics.patch(name=topic, body={"topic": {"labels": {"a": "b"}}}), 400, "INVALID_ARGUMENT"),
        (subs.create(name=sub_path(f"ds-{unique}"), body={"topic": topic_path(f"missing-{unique}")}), 404,
         "NOT_FOUND"),
        (subs.pull(subscription=sub_path(f"missing-{unique}"), body={"maxMessages": 1}), 404, "NOT_FOUND"),
        (subs.get(subscription=sub_path(f"missing-{unique}")), 404, "NOT_FOUND"),
    ]
    for call, code, status in cases:
        got_code, error = _http_error(call)
        assert (got_code, error["status"]) == (code, status), (call.uri, error)
        assert error["message"]
