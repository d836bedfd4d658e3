"""Requests of both kinds (bytes in the log item, bytes in S3) through the paths other functions run: the
maintenance run's fan-out catch-up and dead-letter sweep, and push's dead-lettering. Each keeps using its S3
grant for large requests (the IAM gate of `make test` sees these calls under the functions that make them)."""

from __future__ import annotations

import base64
import dataclasses
import json

from chalicelib.delivery.maintenance import catch_up_fanout, sweep_dead_letters
from chalicelib.delivery.push import PushDelivery
from chalicelib.local.push_pump import lambda_record
from chalicelib.runtime import Services
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.push_state import queue_arn
from tests.functional.conftest import FakeClock
from tests.functional.test_dead_letter_sweep import DEADLINE, _dead, _nack, _policy, _setup
from tests.functional.test_fanout_catch_up import STREAM_RETENTION, stream_only  # noqa: F401 (a fixture)
from tests.functional.test_message_path import pull, sub, topic
from tests.functional.test_policies import Stream, Unthrottled, _publish, _pull

BIG = b"B" * 9000  # above the log item's limit: an S3 object
SMALL = b"small"


def test_the_catch_up_fans_out_requests_of_both_kinds(stream_only: Services, clock: FakeClock) -> None:  # noqa: F811
    ids = _publish(stream_only, topic(), SMALL) + _publish(stream_only, topic(), BIG)
    clock.advance(STREAM_RETENTION + 3600)  # fan-out was down longer than the stream keeps records
    assert catch_up_fanout(stream_only.ctx) == 2
    got = pull(stream_only, 100)
    assert sorted(m["message"]["messageId"] for m in got) == sorted(ids)
    assert sorted(base64.b64decode(m["message"]["data"]) for m in got) == [BIG, SMALL]
    assert catch_up_fanout(stream_only.ctx) == 0  # both marked fanned out, in whichever partition they are


def _to_last_attempt(services: Services, stream: Stream, body: bytes, attempts: int = 5) -> None:
    _publish(services, topic(), body)
    stream.pump()
    for attempt in range(1, attempts + 1):
        (msg,) = _pull(services, sub())
        if attempt < attempts:
            _nack(services, msg)


def test_the_sweep_forwards_large_and_small_last_attempts(services: Services, clock: FakeClock) -> None:
    stream, _ = _setup(services, clock, **_policy())
    for body in (SMALL, BIG):
        _to_last_attempt(services, stream, body)
        clock.advance(DEADLINE + 1)
        with acting_as("maintenance"):
            assert sweep_dead_letters(services.ctx) == 1
        (dead,) = _dead(services, stream)
        assert base64.b64decode(dead["message"]["data"]) == body


def test_push_forwards_a_large_last_attempt(services: Services, clock: FakeClock) -> None:
    stream, _ = _setup(services, clock, pushConfig={"pushEndpoint": "http://127.0.0.1:9/h"},
                       retryPolicy={"minimumBackoff": "0s", "maximumBackoff": "0s"}, **_policy())
    _publish(services, topic(), BIG)
    stream.pump()

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        assert base64.b64decode(json.loads(body)["message"]["data"]) == BIG
        return 500

    ctx = dataclasses.replace(services.ctx, push=Unthrottled(services.ctx.config))
    delivery = PushDelivery(ctx, post=post, sleep=clock.advance, monotonic=clock, workers=1)
    rec = services.ctx.resources.require_subscription(sub())
    sqs = aws.client("sqs", services.ctx.config)
    arn = queue_arn(rec.queue_url, services.ctx.config.region)
    for _ in range(10):
        resp = sqs.receive_message(QueueUrl=rec.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=DEADLINE,
                                   MessageSystemAttributeNames=["All"])
        if not resp.get("Messages"):
            break
        delivery.handle({"Records": [lambda_record(m, arn, "us-east-1") for m in resp["Messages"]]})
    (dead,) = _dead(services, stream)
    assert base64.b64decode(dead["message"]["data"]) == BIG
