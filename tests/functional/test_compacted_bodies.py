"""Bodies whose raw object is gone (compaction deletes raw objects once archived; retention ends both): pull, push
delivery and the background seek read the archive for them, and a body neither holds is not delivered (a pull
says so). On AWS these reads answer 404 only with s3:ListBucket on the prefix (infra/policies.py): the IAM gate
of `make test` checks these calls under the functions that make them (infra/iam_gate.py)."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request, subscription_request
from chalicelib.core import names
from chalicelib.core.errors import FailedPrecondition
from chalicelib.core.replay.seek_jobs import SUCCEEDED
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.push import PushDelivery
from chalicelib.local.push_pump import lambda_record
from chalicelib.runtime import Services
from chalicelib.service.seek_worker import SeekWorker
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.push_state import queue_arn
from tests.functional.conftest import FakeClock, stream_event

P = "compacted"
TOPIC = names.make(P, "topics", "topic-t")
PULLED, PUSHED = names.make(P, "subscriptions", "sub-pulled"), names.make(P, "subscriptions", "sub-pushed")


@pytest.fixture
def gone(services: Services, clock: FakeClock) -> Services:
    """Two messages fanned out as pointers into their raw objects, which are then deleted."""
    ctx = services.ctx
    config = dataclasses.replace(ctx.config, inline_max_bytes=0, seek_inline_max_messages=1, seek_chunk_messages=1)
    svc = Services.build(dataclasses.replace(ctx, config=config))
    svc.admin.create_topic(TOPIC, Topic())
    svc.admin.create_subscription(PULLED, subscription_request({"topic": TOPIC.path, "retainAckedMessages": True},
                                                                PULLED))
    svc.admin.create_subscription(PUSHED, subscription_request(
        {"topic": TOPIC.path, "pushConfig": {"pushEndpoint": "http://127.0.0.1:1/hook"}}, PUSHED))
    clock.advance(1)
    for text in ("first", "second"):
        svc.publish.publish(TOPIC, publish_request({"messages": [{"data": base64.b64encode(text.encode()).decode()}]}))
        clock.advance(0.01)
    assert FanOut(svc.ctx).handle(stream_event(svc)) == {"batchItemFailures": []}
    s3 = aws.s3(config)
    for obj in s3.list_objects_v2(Bucket=config.bucket, Prefix="raw/").get("Contents", []):
        s3.delete_object(Bucket=config.bucket, Key=obj["Key"])
    clock.advance(1)
    return svc


def test_push_looks_in_the_archive_and_delivers_nothing_it_cannot_read(gone: Services) -> None:
    rec = gone.ctx.resources.require_subscription(PUSHED)
    received = aws.sqs(gone.ctx.config).receive_message(QueueUrl=rec.queue_url, MaxNumberOfMessages=10,
                                                        MessageSystemAttributeNames=["All"])["Messages"]
    arn = queue_arn(rec.queue_url, gone.ctx.config.region)
    posted: list[Any] = []

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        posted.append(body)
        return 200

    PushDelivery(gone.ctx, post=post).handle({"Records": [lambda_record(m, arn, "us-east-1") for m in received]})
    assert posted == []  # neither the raw object nor the archive holds the bodies


def test_a_pull_looks_in_the_archive(gone: Services) -> None:
    with acting_as("api_handler"), pytest.raises(FailedPrecondition, match="no longer stored"):  # as the API runs it
        gone.pull.pull(PULLED, PullRequest(10, True))


def test_the_background_seek_looks_in_the_archive(gone: Services) -> None:
    outcome = gone.seek.seek_to_time(PULLED, 0)
    assert outcome.background
    states = []
    while not gone.ctx.invoker.pending.empty():
        states.append(SeekWorker(gone.ctx).handle(gone.ctx.invoker.pending.get()[1])["state"])
    assert states and states[-1] == SUCCEEDED
