"""chalicelib/local/moto_speedups.py, receives and acknowledgements: O(batch) per receive, moto's answers unchanged
(retention, deletes by current and earlier receipt handles, invalid handles, visibility changes, counts, long polls)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from chalicelib.local.moto_fixes import fix_moto
from chalicelib.local.moto_speedups import speed_up_moto


@pytest.fixture
def sqs() -> Iterator[Any]:
    fix_moto()  # the order of Stack: fixes first, then the speed-ups
    speed_up_moto()
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """moto's SQS clock, injected (seconds): the speed-ups replace the same two functions of its models module."""
    import moto.sqs.models as sqs_models

    now = {"s": 1_800_000_000.0}
    monkeypatch.setattr(sqs_models, "unix_time", lambda dt=None: now["s"])
    monkeypatch.setattr(sqs_models, "unix_time_millis", lambda dt=None: now["s"] * 1000.0)
    return now


def bodies(answer: dict[str, Any]) -> list[str]:
    return [m["Body"] for m in answer.get("Messages", [])]


def test_retention_still_expires_a_message_older_than_the_period(sqs: Any, clock: dict[str, float]) -> None:
    url = sqs.create_queue(QueueName="retained", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="young")
    clock["s"] += 59  # within the period: delivered
    assert bodies(sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)) == ["young"]
    clock["s"] += 2  # 61 s old: past the period, never delivered again
    assert bodies(sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)) == []
    sqs.send_message(QueueUrl=url, MessageBody="fresh")
    clock["s"] += 1
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert "young" not in bodies(received)


def test_a_receive_reads_its_batch_not_the_queue(sqs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import moto.sqs.models as sqs_models

    url = sqs.create_queue(QueueName="deep")["QueueUrl"]
    for start in range(0, 1000, 10):
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{start + i}"}
                                                      for i in range(10)])
    tested = {"visible": 0, "attributes": 0}
    message_class: Any = sqs_models.Message
    queue_class: Any = sqs_models.Queue
    visible, attributes = message_class.visible, queue_class.attributes

    def counting_visible(message: Any) -> bool:
        tested["visible"] += 1
        return bool(visible.fget(message))

    def counting_attributes(queue: Any) -> dict[str, Any]:
        tested["attributes"] += 1
        return dict(attributes.fget(queue))

    monkeypatch.setattr(message_class, "visible", property(counting_visible))
    monkeypatch.setattr(queue_class, "attributes", property(counting_attributes))
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    assert bodies(first) == [f"m{i}" for i in range(10)]
    assert tested == {"visible": 20, "attributes": 0}  # ten messages, each tested in the view and in the loop
    tested["visible"] = 0
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)  # passes the ten in flight, takes the next ten
    assert tested["visible"] == 40  # and the ten in flight: by moto_fixes' release of expired leases, by the view
    monkeypatch.setattr(message_class, "visible", visible)
    monkeypatch.setattr(queue_class, "attributes", attributes)
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("980", "20")


def test_acknowledgements_answer_as_moto_does(sqs: Any, clock: dict[str, float]) -> None:
    url = sqs.create_queue(QueueName="acked", Attributes={"VisibilityTimeout": "10"})["QueueUrl"]
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    m0, m1, m2 = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m0["ReceiptHandle"])  # in flight: the fast path
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m0["ReceiptHandle"])  # again: accepted, as moto does
    with pytest.raises(ClientError, match="ReceiptHandleIsInvalid"):
        sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-handle")
    clock["s"] += 11  # m1 and m2 visible again; m1 received anew, with a new handle
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    assert bodies({"Messages": again}) == ["m1"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m1["ReceiptHandle"])  # an earlier handle: moto's own path
    sqs.delete_message(QueueUrl=url, ReceiptHandle=m2["ReceiptHandle"])  # visible again, not in flight
    assert bodies(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)) == []
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")


def test_visibility_changes_answer_as_moto_does(sqs: Any, clock: dict[str, float]) -> None:
    url = sqs.create_queue(QueueName="leased")["QueueUrl"]
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(2)])
    m0, m1 = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=30)["Messages"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m0["ReceiptHandle"], VisibilityTimeout=0)  # a nack
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m1["ReceiptHandle"], VisibilityTimeout=120)
    clock["s"] += 1
    with pytest.raises(ClientError, match="beyond the limit"):  # 43,200 s from now ends past 12 h after the send
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m1["ReceiptHandle"], VisibilityTimeout=43200)
    with pytest.raises(ClientError, match="ReceiptHandleIsInvalid"):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle="not-a-handle", VisibilityTimeout=0)
    assert bodies(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=300)) == ["m0"]
    clock["s"] += 100  # m1's 120 s lease still holds it
    assert bodies(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)) == []
    clock["s"] += 21
    assert bodies(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)) == ["m1"]


def test_a_long_poll_still_wakes_for_a_send(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="waiting")["QueueUrl"]
    sender = threading.Timer(0.3, lambda: sqs.send_message(QueueUrl=url, MessageBody="late"))
    sender.start()
    start = time.monotonic()
    try:
        assert bodies(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)) == ["late"]
    finally:
        sender.join()
    assert time.monotonic() - start < 4
