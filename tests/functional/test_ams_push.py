"""AMS push on moto in-process: under the deployed push rules an unverified endpoint gets nothing; once
:verifyPushEndpoint has seen the hash, messages go out in AMS's batch body with the generated authorization."""

from __future__ import annotations

import dataclasses
import json

import pytest

from chalicelib.core.errors import FailedPrecondition
from chalicelib.core.wire.ams import AmsPushRequest
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.delivery.push import PushDelivery
from chalicelib.runtime import Services
from chalicelib.service import ams as ams_service
from tests.functional.conftest import FakeClock
from tests.functional.test_push_handler import FakeEndpoint, failures, msg, publish, sqs_event, sub, topic

HOOK = "https://127.0.0.1:9/hook"


@pytest.fixture
def strict(services: Services) -> Services:
    """The deployed push rules (https, public addresses) with 127.0.0.1 allowed, as a test endpoint needs."""
    config = dataclasses.replace(services.ctx.config, push_strict=True, push_allow_list=("127.0.0.1",))
    return Services.build(dataclasses.replace(services.ctx, config=config))


def test_push_waits_for_verification_then_sends_batches(strict: Services, clock: FakeClock,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    strict.admin.create_topic(topic(), Topic())
    made = strict.ams.create_subscription(sub(), Subscription(topic=topic().path),
                                          AmsPushRequest(HOOK, max_messages=2, retry_period_ms=1000))
    push = made.spec.ams_push
    assert push is not None and not push.verified and made.spec.retain_acked_messages
    publish(strict, msg(b"early"))
    endpoint = FakeEndpoint(204)
    event = sqs_event(strict)
    assert failures(PushDelivery(strict.ctx, post=endpoint, sleep=clock.advance).handle(event)) == {
        r["messageId"] for r in event["Records"]}
    assert endpoint.calls == []  # not verified: nothing reaches the endpoint

    monkeypatch.setattr(ams_service, "fetch_verification_hash", lambda config, url: (200, "someone else's"))
    with pytest.raises(FailedPrecondition):
        strict.ams.verify_push_endpoint(sub())
    monkeypatch.setattr(ams_service, "fetch_verification_hash", lambda config, url: (200, push.verification_hash))
    assert strict.ams.verify_push_endpoint(sub()).spec.ams_push.verified  # type: ignore[union-attr]

    ids = publish(strict, msg(b"a"), msg(b"b"), msg(b"c"))
    event = sqs_event(strict)
    assert failures(PushDelivery(strict.ctx, post=endpoint, sleep=clock.advance).handle(event)) == set()
    bodies = [json.loads(body) for _, body, _, _ in endpoint.calls]
    assert sorted(len(b["messages"]) for b in bodies) == [1, 2]
    assert sorted(m["message"]["messageId"] for b in bodies for m in b["messages"]) == sorted(ids)
    assert {headers["Authorization"] for _, _, headers, _ in endpoint.calls} == {push.authorization_value}
