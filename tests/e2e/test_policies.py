"""Delivery policies through the real stack with google-cloud-pubsub (REST): dead-letter, retry policy,
filters, ordering keys, exactly-once, detach (pull subscriptions; push ones are in test_push*.py)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.pubsub_v1 import PubsubMessage, ReceivedMessage

pytestmark = pytest.mark.e2e

PROJECT = "e2e-project"


def _topic(publisher: Any, rid: str) -> str:
    name = f"projects/{PROJECT}/topics/{rid}"
    publisher.create_topic(name=name)
    return name


def _sub(subscriber: Any, rid: str, topic: str, **spec: Any) -> str:
    name = f"projects/{PROJECT}/subscriptions/{rid}"
    subscriber.create_subscription(request={"name": name, "topic": topic, **spec})
    return name


def _pull(subscriber: Any, sub: str, n: int = 10, wait: bool = True) -> list[ReceivedMessage]:
    return list(subscriber.pull(request={"subscription": sub, "max_messages": n,
                                         "return_immediately": not wait}).received_messages)


def _pull_until(subscriber: Any, sub: str, count: int, timeout: float = 10) -> list[ReceivedMessage]:
    got: list[ReceivedMessage] = []
    end = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < end:
        got += _pull(subscriber, sub, count - len(got))
    return got


def test_dead_letter_topic(publisher: Any, subscriber: Any, unique: str) -> None:
    topic, dlt = _topic(publisher, f"{unique}-src"), _topic(publisher, f"{unique}-dlt")
    dead_sub = _sub(subscriber, f"{unique}-dead", dlt)
    sub = _sub(subscriber, f"{unique}-sub", topic,
               dead_letter_policy={"dead_letter_topic": dlt, "max_delivery_attempts": 5})
    assert subscriber.get_subscription(subscription=sub).dead_letter_policy.max_delivery_attempts == 5
    publisher.publish(topic, b"poison", origin="test").result()
    for attempt in range(1, 6):
        (msg,) = _pull_until(subscriber, sub, 1)
        assert msg.delivery_attempt == attempt
        subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=0)
    assert _pull(subscriber, sub, wait=False) == []
    (dead,) = _pull_until(subscriber, dead_sub, 1)
    assert dead.message.data == b"poison"
    attrs = dict(dead.message.attributes)
    assert attrs["origin"] == "test"
    assert attrs["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert attrs["CloudPubSubDeadLetterSourceSubscription"] == f"{unique}-sub"
    assert attrs["CloudPubSubDeadLetterSourceSubscriptionProject"] == PROJECT
    assert "CloudPubSubDeadLetterSourceTopicPublishTime" in attrs


def test_dead_letter_topic_must_exist(publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    with pytest.raises(gexc.BadRequest):
        _sub(subscriber, unique, topic, dead_letter_policy={"dead_letter_topic": f"projects/{PROJECT}/topics/nope"})


def test_retry_policy_delays_redelivery(publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic, retry_policy={"minimum_backoff": "2s", "maximum_backoff": "4s"})
    publisher.publish(topic, b"later").result()
    (msg,) = _pull_until(subscriber, sub, 1)
    nacked = time.monotonic()
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=0)
    assert _pull(subscriber, sub, wait=False) == []  # not at once: the backoff holds it
    (again,) = _pull_until(subscriber, sub, 1)
    assert again.message.message_id == msg.message.message_id
    assert time.monotonic() - nacked >= 1.5


def test_filters(publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    with pytest.raises(gexc.BadRequest, match="position"):
        _sub(subscriber, f"{unique}-bad", topic, filter='attributes.color = "red" AND')
    sub = _sub(subscriber, unique, topic, filter='attributes.color = "red" OR hasPrefix(attributes.size, "X")')
    publisher.publish(topic, b"a", color="red").result()
    publisher.publish(topic, b"b", color="blue").result()
    publisher.publish(topic, b"c", size="XL").result()
    got = _pull_until(subscriber, sub, 2)
    # "b" never comes; the control: a matching message published after it does.
    publisher.publish(topic, b"d", color="red").result()
    got += _pull_until(subscriber, sub, 1)
    got += _pull(subscriber, sub, wait=False)
    assert sorted(m.message.data for m in got) == [b"a", b"c", b"d"]
    with pytest.raises(gexc.BadRequest):  # filters are immutable
        subscriber.update_subscription(request={"subscription": {"name": sub, "filter": ""},
                                                "update_mask": {"paths": ["filter"]}})


def test_ordering_keys(gapic: Any, publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic, enable_message_ordering=True)
    keys = ["k1", "k2", "k3"]
    for batch in range(4):  # one request per batch: publish order = request order, then index
        gapic.publish(topic=topic, messages=[PubsubMessage(data=f"{k}:{batch * 5 + i}".encode(), ordering_key=k)
                                             for k in keys for i in range(5)])
    seen: dict[str, list[int]] = defaultdict(list)
    first_nack_done = False
    end = time.monotonic() + 20
    while sum(map(len, seen.values())) < 60 and time.monotonic() < end:
        msgs = _pull(subscriber, sub, 10)
        if not first_nack_done and msgs:  # a nacked message comes back before its successors
            head = msgs[0]
            nack_ids = [m.ack_id for m in msgs if m.message.ordering_key == head.message.ordering_key]
            subscriber.modify_ack_deadline(subscription=sub, ack_ids=nack_ids, ack_deadline_seconds=0)
            msgs = [m for m in msgs if m.message.ordering_key != head.message.ordering_key]
            first_nack_done = True
        for m in msgs:
            key, n = m.message.data.decode().split(":")
            assert m.message.ordering_key == key
            seen[key].append(int(n))
        if msgs:
            subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in msgs])
    assert {k: v for k, v in seen.items()} == {k: list(range(20)) for k in keys}


def test_ordering_key_over_1kb_is_refused(gapic: Any, publisher: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    with pytest.raises(gexc.BadRequest):
        gapic.publish(topic=topic, messages=[PubsubMessage(data=b"x", ordering_key="k" * 1025)])


def test_exactly_once_racing_pullers(publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic, enable_exactly_once_delivery=True)
    for i in range(30):
        publisher.publish(topic, str(i).encode())
    publisher.publish(topic, b"last").result()
    acked: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        end = time.monotonic() + 15
        while time.monotonic() < end:
            with lock:
                if len(acked) >= 31:
                    return
            msgs = _pull(subscriber, sub, 5)
            if not msgs:
                continue
            subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in msgs])
            with lock:
                acked.extend(m.message.message_id for m in msgs)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acked) == 31 and len(set(acked)) == 31  # every message acked exactly once
    # Nothing comes again; the control: a message published now does, alone.
    marker = publisher.publish(topic, b"marker").result()
    again = _pull_until(subscriber, sub, 2, timeout=2)
    assert [m.message.message_id for m in again] == [marker]


def test_exactly_once_stale_ack_fails_per_id(publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic, enable_exactly_once_delivery=True)
    publisher.publish(topic, b"a").result()
    publisher.publish(topic, b"b").result()
    first, second = _pull_until(subscriber, sub, 2)
    subscriber.acknowledge(subscription=sub, ack_ids=[first.ack_id])
    with pytest.raises(gexc.BadRequest) as err:  # already acked: this id fails, the other succeeds
        subscriber.acknowledge(subscription=sub, ack_ids=[first.ack_id, second.ack_id])
    assert err.value.reason == "EXACTLY_ONCE_ACKID_FAILURE"
    assert err.value.metadata == {first.ack_id: "PERMANENT_FAILURE_INVALID_ACK_ID"}
    with pytest.raises(gexc.BadRequest):
        subscriber.acknowledge(subscription=sub, ack_ids=[second.ack_id])
    assert _pull(subscriber, sub, wait=False) == []


def test_detach(publisher: Any, subscriber: Any, unique: str) -> None:
    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic)
    publisher.publish(topic, b"x").result()
    publisher.detach_subscription(request={"subscription": sub})
    with pytest.raises(gexc.BadRequest, match="detached") as err:  # over REST, errors map by HTTP status
        _pull(subscriber, sub, wait=False)
    assert err.value.response.json()["error"]["status"] == "FAILED_PRECONDITION"
    assert sub not in list(publisher.list_topic_subscriptions(topic=topic))
    assert subscriber.get_subscription(subscription=sub).detached


def test_exactly_once_errors_reach_the_client_per_ack_id(publisher: Any, subscriber: Any, unique: str) -> None:
    """Google's shape: INVALID_ARGUMENT + ErrorInfo EXACTLY_ONCE_ACKID_FAILURE, metadata {ack id: reason}; the
    client library's own request processing then fails exactly the bad id's future and completes the other."""
    from google.cloud.pubsub_v1.subscriber._protocol import requests as client_requests
    from google.cloud.pubsub_v1.subscriber._protocol.streaming_pull_manager import _process_requests
    from google.cloud.pubsub_v1.subscriber.exceptions import AcknowledgeError, AcknowledgeStatus
    from google.cloud.pubsub_v1.subscriber.futures import Future

    topic = _topic(publisher, unique)
    sub = _sub(subscriber, unique, topic, enable_exactly_once_delivery=True)
    publisher.publish(topic, b"a").result()
    publisher.publish(topic, b"b").result()
    first, second = _pull_until(subscriber, sub, 2)
    subscriber.acknowledge(subscription=sub, ack_ids=[first.ack_id])
    with pytest.raises(gexc.BadRequest) as err:
        subscriber.acknowledge(subscription=sub, ack_ids=[first.ack_id, second.ack_id])
    assert err.value.reason == "EXACTLY_ONCE_ACKID_FAILURE" and err.value.domain == "pubsub.googleapis.com"
    assert err.value.metadata == {first.ack_id: "PERMANENT_FAILURE_INVALID_ACK_ID"}
    futures = {m.ack_id: Future() for m in (first, second)}
    reqs = {m.ack_id: client_requests.AckRequest(m.ack_id, 0, 0, None, futures[m.ack_id])
            for m in (first, second)}
    done, retry = _process_requests(None, reqs, dict(err.value.metadata))
    assert len(done) == 2 and retry == []
    with pytest.raises(AcknowledgeError) as failed:
        futures[first.ack_id].result()
    assert failed.value.error_code == AcknowledgeStatus.INVALID_ACK_ID
    assert futures[second.ack_id].result() == AcknowledgeStatus.SUCCESS
    assert _pull(subscriber, sub, wait=False) == []  # the valid id was acknowledged
    with pytest.raises(gexc.BadRequest) as err:  # modifyAckDeadline of an acked id fails the same way
        subscriber.modify_ack_deadline(subscription=sub, ack_ids=[second.ack_id], ack_deadline_seconds=30)
    assert err.value.metadata == {second.ack_id: "PERMANENT_FAILURE_INVALID_ACK_ID"}


def test_retry_backoff_follows_a_deadline_expiry(publisher: Any, subscriber: Any, unique: str) -> None:
    topic, dlt = _topic(publisher, unique), _topic(publisher, f"{unique}-dlt")
    sub = _sub(subscriber, unique, topic, ack_deadline_seconds=10,
               retry_policy={"minimum_backoff": "5s", "maximum_backoff": "20s"},
               dead_letter_policy={"dead_letter_topic": dlt, "max_delivery_attempts": 5})
    publisher.publish(topic, b"expire me").result()
    (msg,) = _pull_until(subscriber, sub, 1)
    pulled = time.monotonic()
    assert msg.delivery_attempt == 1
    time.sleep(max(0.0, 11.0 - (time.monotonic() - pulled)))  # the 10 s deadline has passed
    assert _pull(subscriber, sub, wait=False) == []  # ... but the 5 s backoff behind it has not
    (again,) = _pull_until(subscriber, sub, 1, timeout=15)
    assert again.message.message_id == msg.message.message_id
    assert again.delivery_attempt == 2  # 1 + one expiry
    assert time.monotonic() - pulled >= 14.0
    subscriber.acknowledge(subscription=sub, ack_ids=[again.ack_id])
