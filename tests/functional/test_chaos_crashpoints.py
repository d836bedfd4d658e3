"""Torn writes on moto (bench/chaos/crashpoints.py): the real publish and exactly-once paths stopped right after one
write, and what the state left behind does. An injected exit raises instead of ending the process, so the caller
sees the publish or the acknowledgement fail, as a client sees a connection cut by a killed process."""

from __future__ import annotations

import base64
import dataclasses
import io
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench.chaos import crashpoints
from chalicelib.api.parsing import acknowledge_request, publish_request, subscription_request
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import ModifyAckDeadlineRequest, PullRequest
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock
from tests.functional.test_message_path import sub, topic

pytestmark = pytest.mark.functional

LARGE = 8_000  # raw bytes over METRO_LOG_INLINE_MAX_BYTES (7,168): the request gets an S3 object


class _Crashed(Exception):
    pass


def _exit(code: int) -> None:
    raise _Crashed(code)


@pytest.fixture
def stack(services: Services, clock: FakeClock) -> Iterator[Services]:
    """Direct fan-out (publish enqueues), one exactly-once subscription."""
    ctx = dataclasses.replace(services.ctx, config=dataclasses.replace(services.ctx.config, direct_fanout=True))
    built = Services.build(ctx)
    built.admin.create_topic(topic(), Topic())
    built.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "enableExactlyOnceDelivery": True}, sub()))
    clock.advance(1)
    yield built
    crashpoints.uninstall()


def crash_at(point: str) -> crashpoints.CrashPoints:
    return crashpoints.install(1.0, [point], exit=_exit, log=io.StringIO())


def publish(services: Services, size: int) -> list[str]:
    msg = {"data": base64.b64encode(b"x" * size).decode()}
    return list(services.publish.publish(topic(), publish_request({"messages": [msg]})).message_ids)


def pull(services: Services) -> list[dict[str, Any]]:
    return list(services.pull.pull(sub(), PullRequest(10, True)).to_wire().get("receivedMessages", []))


def ack(services: Services, ack_id: str) -> None:
    services.pull.acknowledge(sub(), acknowledge_request({"ackIds": [ack_id]}))


def objects(services: Services) -> list[str]:
    listed = aws.client("s3", services.ctx.config).list_objects_v2(Bucket=services.ctx.config.bucket)
    return [o["Key"] for o in listed.get("Contents", [])]


def log_items(services: Services) -> list[dict[str, Any]]:
    ddb = aws.client("dynamodb", services.ctx.config)
    return list(ddb.scan(TableName=services.ctx.config.messages_table)["Items"])


def lease(services: Services) -> dict[str, Any]:
    ddb = aws.client("dynamodb", services.ctx.config)
    items = ddb.scan(TableName=services.ctx.config.leases_table)["Items"]
    (item,) = [i for i in items if i["lease"]["S"].startswith("m#")]
    return item


def in_queue(services: Services) -> tuple[int, int]:
    """(visible, in flight) messages of the subscription's queue."""
    url = services.ctx.resources.cached_subscription(sub()).queue_url
    attrs = aws.client("sqs", services.ctx.config).get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    return int(attrs["Attributes"]["ApproximateNumberOfMessages"]), int(
        attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"])


def later(monkeypatch: pytest.MonkeyPatch, clock: FakeClock, seconds: float) -> None:
    """``seconds`` pass for Metro and for moto's SQS (visibility timeouts run out)."""
    import moto.sqs.models as sqs_models

    clock.advance(seconds)
    shift = getattr(sqs_models, "_test_shift", 0.0) + seconds
    monkeypatch.setattr(sqs_models, "_test_shift", shift, raising=False)
    monkeypatch.setattr(sqs_models, "unix_time", lambda dt=None: time.time() + shift)
    monkeypatch.setattr(sqs_models, "unix_time_millis", lambda dt=None: (time.time() + shift) * 1000.0)


# -- publish -----------------------------------------------------------------------------------------------------

def test_a_crash_after_the_body_loses_no_acknowledged_publish(stack: Services) -> None:
    points = crash_at("publish.after-body")
    with pytest.raises(_Crashed):  # the client gets no answer: the publish is not acknowledged
        publish(stack, LARGE)
    assert points.hits["publish.after-body"] == crashpoints.Hits(1, 1)
    (orphan,) = objects(stack)  # the body is stored ...
    assert log_items(stack) == [] and in_queue(stack) == (0, 0)  # ... no log item, nothing enqueued
    assert pull(stack) == []
    crashpoints.uninstall()
    ids = publish(stack, LARGE)  # the client's retry: a new request, its own object
    assert [m["message"]["messageId"] for m in pull(stack)] == ids
    assert orphan in objects(stack) and len(objects(stack)) == 2  # the orphan stays until the bucket's lifecycle


def test_a_small_request_has_no_body_write_to_crash_after(stack: Services) -> None:
    points = crash_at("publish.after-body")
    ids = publish(stack, 100)
    assert points.hits["publish.after-body"] == crashpoints.Hits(0, 0)
    assert objects(stack) == [] and len(log_items(stack)) == 1
    assert [m["message"]["messageId"] for m in pull(stack)] == ids


def test_a_crash_after_the_enqueue_delivers_an_unacknowledged_publish(stack: Services) -> None:
    crash_at("enqueue.after-send")
    with pytest.raises(_Crashed):
        publish(stack, LARGE)
    assert len(objects(stack)) == 1 and log_items(stack) == [] and in_queue(stack) == (1, 0)
    crashpoints.uninstall()
    (first,) = pull(stack)  # delivered although its publish failed: at-least-once, the body is readable
    assert base64.b64decode(first["message"]["data"]) == b"x" * LARGE
    ack(stack, first["ackId"])
    ids = publish(stack, LARGE)  # the retry: the same data again, under a new message id
    (second,) = pull(stack)
    assert second["message"]["messageId"] == ids[0] != first["message"]["messageId"]


def test_a_crash_after_the_log_item_leaves_a_durable_unacknowledged_publish(stack: Services) -> None:
    crash_at("publish.after-log")
    with pytest.raises(_Crashed):
        publish(stack, LARGE)
    (item,) = log_items(stack)
    assert item["fo"] == {"BOOL": True}  # fanned out by publish: the stream will not enqueue it again
    crashpoints.uninstall()
    (got,) = pull(stack)
    assert base64.b64decode(got["message"]["data"]) == b"x" * LARGE


# -- exactly-once --------------------------------------------------------------------------------------------------

def test_a_crash_after_the_ack_lease_write_never_redelivers(stack: Services, clock: FakeClock,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    publish(stack, 100)
    (got,) = pull(stack)
    crash_at("exactly-once.after-ack")
    with pytest.raises(_Crashed):
        ack(stack, got["ackId"])
    crashpoints.uninstall()
    assert lease(stack)["st"] == {"S": "acked"}
    assert in_queue(stack) == (0, 1)  # the SQS message was not deleted
    # The client saw its ack fail and sends it again: the lease is acked already, so the retry is refused as an
    # invalid ack id, although the acknowledgement did take effect.
    with pytest.raises(InvalidArgument) as refused:
        ack(stack, got["ackId"])
    assert refused.value.details[0]["metadata"] == {got["ackId"]: "PERMANENT_FAILURE_INVALID_ACK_ID"}
    later(monkeypatch, clock, 600)  # its visibility runs out: SQS hands the message out again
    assert pull(stack) == []  # the claim finds the lease acked: not delivered ...
    assert in_queue(stack) == (0, 0)  # ... and deleted for good


def test_a_crash_after_a_nack_lease_write_delays_the_redelivery(stack: Services, clock: FakeClock,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    publish(stack, 100)
    (got,) = pull(stack)
    crash_at("exactly-once.after-extend")
    with pytest.raises(_Crashed):
        stack.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((got["ackId"],), 0))
    crashpoints.uninstall()
    assert float(lease(stack)["deadline"]["N"]) < clock()  # the lease is let go ...
    assert in_queue(stack) == (0, 1) and pull(stack) == []  # ... the SQS message still invisible
    later(monkeypatch, clock, 600)  # after the first delivery's visibility: redelivered, not lost
    (again,) = pull(stack)
    assert again["message"]["messageId"] == got["message"]["messageId"]


def test_a_crash_after_a_modack_lease_write_keeps_the_message_with_its_holder(
        stack: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    publish(stack, 100)
    (got,) = pull(stack)
    crash_at("exactly-once.after-extend")
    with pytest.raises(_Crashed):
        stack.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((got["ackId"],), 300))
    crashpoints.uninstall()
    later(monkeypatch, clock, 60)  # SQS's visibility (the old deadline) ran out; the lease's (300 s) did not
    assert in_queue(stack) == (1, 0)
    assert pull(stack) == []  # received again, but held by the first delivery: not delivered
    assert in_queue(stack) == (0, 1)
    # The holder's ack still succeeds. Its DeleteMessageBatch names the older receipt handle: moto deletes the
    # message with it; SQS may not, and then the next receive's claim finds the lease acked and deletes it.
    ack(stack, got["ackId"])
    later(monkeypatch, clock, 600)
    assert pull(stack) == []
    assert in_queue(stack) == (0, 0)


def test_a_crash_after_the_claim_redelivers_after_the_deadline(stack: Services, clock: FakeClock,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (mid,) = publish(stack, 100)
    crash_at("exactly-once.after-claim")
    with pytest.raises(_Crashed):  # the pull's response is never sent
        pull(stack)
    crashpoints.uninstall()
    assert lease(stack)["st"] == {"S": "leased"} and in_queue(stack) == (0, 1)
    later(monkeypatch, clock, 600)  # past the lease's deadline and the message's visibility
    (got,) = pull(stack)
    assert got["message"]["messageId"] == mid
    ack(stack, got["ackId"])
