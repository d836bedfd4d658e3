"""Dead-lettering without a pull, through the real stack with google-cloud-pubsub (REST): once the last attempt
ends (a nack, or its ack deadline passing), the message reaches the dead-letter topic although nobody pulls the
source subscription again."""

from __future__ import annotations

import time
from typing import Any

import pytest
from google.pubsub_v1 import ReceivedMessage

from tests.e2e.test_policies import PROJECT, _pull, _sub, _topic

pytestmark = pytest.mark.e2e

BOUND = 10.0  # seconds within which a dead-lettered message must arrive (docs/policies.md)


def _arrives(subscriber: Any, sub: str, bound: float) -> list[ReceivedMessage]:
    """Poll the dead-letter topic's subscription until a message comes or ``bound`` seconds pass."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        got = _pull(subscriber, sub, wait=False)
        if got:
            return got
        time.sleep(0.2)
    return []


def _to_last_attempt(publisher: Any, subscriber: Any, unique: str, deadline: int) -> tuple[str, str, Any]:
    topic, dlt = _topic(publisher, f"{unique}-src"), _topic(publisher, f"{unique}-dlt")
    dead = _sub(subscriber, f"{unique}-dead", dlt)
    sub = _sub(subscriber, f"{unique}-sub", topic, ack_deadline_seconds=deadline,
               dead_letter_policy={"dead_letter_topic": dlt, "max_delivery_attempts": 5})
    publisher.publish(topic, b"poison").result()
    msg: Any = None
    for attempt in range(1, 6):
        (msg,) = _pull(subscriber, sub, 1)
        assert msg.delivery_attempt == attempt
        if attempt < 5:
            subscriber.modify_ack_deadline(subscription=sub, ack_ids=[msg.ack_id], ack_deadline_seconds=0)
    return sub, dead, msg


def test_last_nack_dead_letters_with_nobody_pulling(publisher: Any, subscriber: Any, unique: str) -> None:
    sub, dead, last = _to_last_attempt(publisher, subscriber, unique, 60)
    subscriber.modify_ack_deadline(subscription=sub, ack_ids=[last.ack_id], ack_deadline_seconds=0)
    (got,) = _arrives(subscriber, dead, BOUND)  # the source is never pulled again
    assert got.message.data == b"poison"
    assert got.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert got.message.attributes["CloudPubSubDeadLetterSourceSubscription"] == f"{unique}-sub"
    assert got.message.attributes["CloudPubSubDeadLetterSourceSubscriptionProject"] == PROJECT


def test_expired_last_attempt_dead_letters_with_nobody_pulling(publisher: Any, subscriber: Any,
                                                               unique: str) -> None:
    _, dead, _ = _to_last_attempt(publisher, subscriber, unique, 10)  # the last attempt is neither acked nor nacked
    (got,) = _arrives(subscriber, dead, 10 + BOUND)  # its ack deadline, then the sweep
    assert got.message.data == b"poison"
    assert got.message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
