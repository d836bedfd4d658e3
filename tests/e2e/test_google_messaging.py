"""google-cloud-pubsub (REST transport) against the real local stack: publish, pull, ack, deadlines, fan-out."""

from __future__ import annotations

import threading
import time

import pytest
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage

from tests.e2e.google_helpers import assert_drained, google_status, pull_n, pull_nothing, sub_path, topic_path

pytestmark = pytest.mark.e2e


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
    assert_drained(subscriber, gapic, topic, subs)


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
    assert_drained(subscriber, gapic, topic, [sub])


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
    assert_drained(subscriber, gapic, topic, [sub])


def test_modify_ack_deadline_extends_lease(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher,
                                           topic: str, sub: str) -> None:
    gapic.publish(topic=topic, messages=[PubsubMessage(data=b"keep")])
    [msg] = pull_n(subscriber, sub, 1)
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=60)
    assert_drained(subscriber, gapic, topic, [sub])  # the marker arrives, the leased message does not
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
