"""Dead-lettering without a pull, on moto: the nack that ends the last attempt forwards at once, the sweep
forwards expired last attempts, acknowledged ones stay put, and subscriptions without a dead-letter policy
never write a last-attempt record."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from chalicelib.api.parsing import subscription_request
from chalicelib.core import live
from chalicelib.core.queueing.deadletter import LastAttempt
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import AcknowledgeRequest, ModifyAckDeadlineRequest
from chalicelib.delivery.maintenance import sweep_dead_letters
from chalicelib.delivery.push import PushDelivery
from chalicelib.local.push_pump import lambda_record
from chalicelib.runtime import Services
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.deadletter import LastAttemptStore
from chalicelib.store.push_state import queue_arn
from tests.functional.conftest import FakeClock
from tests.functional.test_message_path import sub, topic
from tests.functional.test_policies import Stream, Unthrottled, _publish, _pull

DEADLINE = 10


class CountingRecords(LastAttemptStore):
    """The last-attempt store, counting its writes."""

    def __init__(self, inner: LastAttemptStore) -> None:
        self.__dict__.update(inner.__dict__)
        self.puts: list[int] = []

    def put(self, entries: Sequence[LastAttempt], expires: int) -> None:
        self.puts.append(len(entries))
        super().put(entries, expires)


def _setup(services: Services, clock: FakeClock, **spec: Any) -> tuple[Stream, CountingRecords]:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_topic(topic("dlt"), Topic())
    services.admin.create_subscription(sub("dead"), subscription_request({"topic": topic("dlt").path}, sub("dead")))
    services.admin.create_subscription(sub(), subscription_request({
        "topic": topic().path, "ackDeadlineSeconds": DEADLINE, **spec}, sub()))
    clock.advance(1)
    records = CountingRecords(services.ctx.last_attempts)
    services.ctx.last_attempts = records
    return Stream(services), records


def _policy(attempts: int = 5) -> dict[str, Any]:
    return {"deadLetterPolicy": {"deadLetterTopic": topic("dlt").path, "maxDeliveryAttempts": attempts}}


def _nack(services: Services, msg: dict[str, Any]) -> None:
    services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((msg["ackId"],), 0))


def _to_last_attempt(services: Services, stream: Stream, attempts: int = 5) -> dict[str, Any]:
    """Publish one message and nack it until it is delivered for its last attempt; return that delivery."""
    _publish(services, topic(), b"poison")
    stream.pump()
    for attempt in range(1, attempts + 1):
        (msg,) = _pull(services, sub())
        assert msg["deliveryAttempt"] == attempt
        if attempt < attempts:
            _nack(services, msg)
    return msg


def _dead(services: Services, stream: Stream) -> list[dict[str, Any]]:
    stream.pump()
    return _pull(services, sub("dead"))


def _backlog(services: Services) -> int:
    return services.ctx.queues.backlog(services.ctx.resources.require_subscription(sub()).queue_url)


def test_the_nack_that_ends_the_last_attempt_forwards_at_once(services: Services, clock: FakeClock) -> None:
    stream, records = _setup(services, clock, **_policy())
    last = _to_last_attempt(services, stream)
    assert records.puts == [1]  # one record, for the last attempt only
    _nack(services, last)
    (dead,) = _dead(services, stream)  # nobody pulled the source again
    assert base64.b64decode(dead["message"]["data"]) == b"poison"
    assert dead["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert _backlog(services) == 0
    clock.advance(DEADLINE + 1)
    assert sweep_dead_letters(services.ctx) == 0  # its record went with it: nothing forwarded twice
    assert _dead(services, stream) == []


def test_the_sweep_forwards_a_last_attempt_whose_deadline_passed(services: Services, clock: FakeClock) -> None:
    stream, _ = _setup(services, clock, **_policy())
    _to_last_attempt(services, stream)
    assert sweep_dead_letters(services.ctx) == 0  # the deadline has not passed
    assert _dead(services, stream) == []
    clock.advance(DEADLINE + 1)  # past the live counters' flush interval too
    with acting_as("maintenance"):  # as the maintenance function: its publish flushes the counters with its role
        assert sweep_dead_letters(services.ctx) == 1
    assert services.ctx.counters.read(topic("dlt"))[live.PUBLISHED] == 1
    (dead,) = _dead(services, stream)
    assert dead["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert _backlog(services) == 0


def test_an_acknowledged_last_attempt_is_not_forwarded(services: Services, clock: FakeClock) -> None:
    stream, _ = _setup(services, clock, **_policy())
    last = _to_last_attempt(services, stream)
    services.pull.acknowledge(sub(), AcknowledgeRequest((last["ackId"],)))
    clock.advance(DEADLINE + 1)
    assert sweep_dead_letters(services.ctx) == 0
    assert _dead(services, stream) == []
    assert services.ctx.last_attempts.due(clock() + 3600, 10) == []  # the sweep dropped the record


def test_a_new_deadline_postpones_the_sweep(services: Services, clock: FakeClock) -> None:
    stream, _ = _setup(services, clock, **_policy())
    last = _to_last_attempt(services, stream)
    services.pull.modify_ack_deadline(sub(), ModifyAckDeadlineRequest((last["ackId"],), 60))
    clock.advance(DEADLINE + 1)
    assert sweep_dead_letters(services.ctx) == 0  # still being worked on
    clock.advance(60)
    assert sweep_dead_letters(services.ctx) == 1
    assert len(_dead(services, stream)) == 1


def test_no_record_without_a_dead_letter_policy(services: Services, clock: FakeClock) -> None:
    stream, records = _setup(services, clock, retryPolicy={"minimumBackoff": "0s", "maximumBackoff": "0s"})
    _publish(services, topic(), b"x")
    stream.pump()
    for _ in range(7):
        (msg,) = _pull(services, sub())
        _nack(services, msg)
    assert records.puts == []


def test_a_push_nack_of_the_last_attempt_forwards_at_once(services: Services, clock: FakeClock) -> None:
    stream, records = _setup(services, clock, pushConfig={"pushEndpoint": "http://127.0.0.1:9/h"},
                             retryPolicy={"minimumBackoff": "0s", "maximumBackoff": "0s"}, **_policy())
    _publish(services, topic(), b"poison")
    stream.pump()
    seen: list[int] = []

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        seen.append(json.loads(body)["deliveryAttempt"])
        return 500

    ctx = dataclasses.replace(services.ctx, push=Unthrottled(services.ctx.config))
    delivery = PushDelivery(ctx, post=post, sleep=clock.advance, monotonic=clock, workers=1)
    rec = services.ctx.resources.require_subscription(sub())
    sqs = aws.client("sqs", services.ctx.config)
    arn = queue_arn(rec.queue_url, services.ctx.config.region)
    receives = 0
    for _ in range(10):
        resp = sqs.receive_message(QueueUrl=rec.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=DEADLINE,
                                   MessageSystemAttributeNames=["All"])
        if not resp.get("Messages"):
            break
        receives += 1
        delivery.handle({"Records": [lambda_record(m, arn, "us-east-1") for m in resp["Messages"]]})
    assert seen == [1, 2, 3, 4, 5]
    assert receives == 5  # the fifth answer forwarded it: no sixth receive was needed
    (dead,) = _dead(services, stream)
    assert dead["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert _backlog(services) == 0
    assert records.puts == []  # push holds the body: no record needed


def test_a_last_nack_without_its_record_leaves_the_message_to_the_next_receive(services: Services,
                                                                               clock: FakeClock) -> None:
    """A record lost (say, a crash before it was written): the nack redelivers, and that receive forwards it."""
    stream, records = _setup(services, clock, **_policy())
    last = _to_last_attempt(services, stream)
    records.delete(records.due(clock() + 3600, 10))
    _nack(services, last)
    assert _dead(services, stream) == []  # not forwarded by the nack
    assert _pull(services, sub()) == []  # the next receive forwards it instead of delivering it
    (dead,) = _dead(services, stream)
    assert dead["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
