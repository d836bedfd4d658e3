"""core/queueing/retry.py: retry delays and visibilities, from a subscription record alone; and the values the
delivery steps decode (service/delivery.py)."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.core.queueing import envelope
from chalicelib.core.queueing.retry import expiry_visibility, nack_delay, redelivery_visibility
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.models import RetryPolicy, Subscription
from chalicelib.service.delivery import decode

NAME = "projects/p/subscriptions/s"
TOPIC = "projects/p/topics/t"


def rec(**spec: Any) -> SubscriptionRecord:
    return SubscriptionRecord(Subscription(name=NAME, topic=TOPIC, **spec), 0.0, "url")


@pytest.mark.parametrize(("attempt", "delay"), [(1, 15), (2, 30), (3, 60), (4, 100), (50, 100)])
def test_nack_delay_doubles_up_to_the_maximum(attempt: int, delay: int) -> None:
    policy = RetryPolicy(minimum_backoff="15s", maximum_backoff="100s")
    assert nack_delay(rec(retry_policy=policy), attempt) == delay


def test_nack_delay_defaults() -> None:
    assert nack_delay(rec(), 3) == 0
    assert nack_delay(rec(retry_policy=RetryPolicy()), 1) == 10
    assert nack_delay(rec(retry_policy=RetryPolicy()), 100) == 600


def test_expiry_visibility_and_redeliveries() -> None:
    r = rec(retry_policy=RetryPolicy(minimum_backoff="30s", maximum_backoff="100s"), ack_deadline_seconds=10)
    assert expiry_visibility(r, 10, 1) == 40
    assert expiry_visibility(r, 20, 2) == 80
    assert redelivery_visibility(r, 1) is None  # the receive's own visibility fits a first attempt
    assert redelivery_visibility(r, 2) == 10 + 60
    flat = rec(retry_policy=RetryPolicy(minimum_backoff="0s", maximum_backoff="0s"))
    assert redelivery_visibility(flat, 5) is None  # the same backoff at every attempt


def test_delivery_size_is_the_message_data_inline_or_in_s3() -> None:
    pointer = envelope.encode(envelope.Envelope("m1", "2026-01-01T00:00:00Z", {"d": "x" * 10}, s3_key="k",
                                                offset=5, length=1_000_000))
    assert '"d":' in pointer  # the attribute looks like inline data to a text search
    assert decode(pointer, "r1", 1).size == 1_000_000
    inline = envelope.encode(envelope.Envelope("m2", "2026-01-01T00:00:00Z", data=b"abc"))
    assert decode(inline, "r2", 1).size == 3


def test_undecodable_bodies_are_kept_without_an_envelope() -> None:
    d = decode("not json", "r1", 3, key="q1")
    assert d.env is None and d.size == len("not json") and d.key == "q1" and d.attempt == 3
