"""The push handler on moto in-process: Lambda-shaped SQS events in, fake HTTP endpoint out."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import jwt
import pytest

from chalicelib.api.parsing import publish_request, subscription_request, update_subscription_request
from chalicelib.core import names
from chalicelib.core.queueing.backoff import PushThrottle, ThrottleState
from chalicelib.core.wire.models import PushConfig, Topic
from chalicelib.core.wire.requests import ModifyPushConfigRequest, PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.push import PushDelivery
from chalicelib.local.push_pump import lambda_record
from chalicelib.runtime import Services
from chalicelib.service.push_config import token_signer
from chalicelib.store import aws
from chalicelib.store.log import entry_from_item
from chalicelib.store.push_state import PushStore, queue_arn
from tests.functional.conftest import FakeClock, stream_event

P = "push-project"
HOOK = "http://127.0.0.1:9/hook"


class FakeEndpoint:
    """Records every POST; answers with scripted statuses (the last one repeats; None = timeout)."""

    def __init__(self, *statuses: int | None) -> None:
        self.statuses = list(statuses) or [204]
        self.calls: list[tuple[str, bytes, dict[str, str], float]] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> int | None:
        self.calls.append((url, body, headers, timeout))
        return self.statuses[min(len(self.calls), len(self.statuses)) - 1]

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body, _, _ in self.calls]


def topic() -> names.Name:
    return names.make(P, "topics", "topic-a")


def sub(i: str = "sub-a") -> names.Name:
    return names.make(P, "subscriptions", i)


def publish(services: Services, *messages: dict[str, Any]) -> list[str]:
    ids = list(services.publish.publish(topic(), publish_request({"messages": list(messages)})).message_ids)
    event = stream_event(services)
    rid = ids[0][:-3]  # only this publish request's record: the stream holds every earlier one too
    event["Records"] = [r for r in event["Records"] if r["dynamodb"]["NewImage"]["rid"]["S"] == rid]
    FanOut(services.ctx).handle(event)
    return ids


def msg(data: bytes, **extra: Any) -> dict[str, Any]:
    return {"data": base64.b64encode(data).decode(), **extra}


def sqs_event(services: Services, name: names.Name = sub(), n: int = 10) -> dict[str, Any]:
    """Receive up to ``n`` messages from the subscription's queue, shaped as Lambda's SQS event."""
    rec = services.ctx.resources.require_subscription(name)
    sqs = aws.client("sqs", services.ctx.config)
    got: list[dict[str, Any]] = []
    while len(got) < n:
        resp = sqs.receive_message(QueueUrl=rec.queue_url, MaxNumberOfMessages=min(10, n - len(got)),
                                   VisibilityTimeout=rec.spec.ack_deadline, MessageSystemAttributeNames=["All"])
        if not resp.get("Messages"):
            break
        got += resp["Messages"]
    arn = queue_arn(rec.queue_url, services.ctx.config.region)
    return {"Records": [lambda_record(m, arn, services.ctx.config.region) for m in got]}


def failures(result: dict[str, Any]) -> set[str]:
    return {f["itemIdentifier"] for f in result["batchItemFailures"]}


@pytest.fixture
def ready(services: Services, clock: FakeClock) -> Services:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "pushConfig": {"pushEndpoint": HOOK}}, sub()))
    clock.advance(1)
    return services


def handler(services: Services, endpoint: FakeEndpoint, clock: FakeClock) -> PushDelivery:
    return PushDelivery(services.ctx, post=endpoint, sleep=clock.advance)


def test_wrapped_body_is_the_seed_format_and_acks_delete(ready: Services, clock: FakeClock) -> None:
    ids = publish(ready, msg(b"hello", attributes={"k": "v"}), msg(b"\x00\xff"))
    endpoint = FakeEndpoint(200)
    event = sqs_event(ready)
    result = handler(ready, endpoint, clock).handle(event)
    assert result == {"batchItemFailures": []}
    bodies = {m["message"]["messageId"]: (m, body) for m, (_, body, _, _) in zip(endpoint.messages(), endpoint.calls)}
    assert set(bodies) == set(ids)
    first, raw = bodies[ids[0]]
    published = first["message"]["publishTime"]
    expected = {"message": {"data": "aGVsbG8=", "attributes": {"k": "v"}, "messageId": ids[0], "message_id": ids[0],
                            "publishTime": published, "publish_time": published},
                "subscription": sub().path}
    assert raw == json.dumps(expected, separators=(",", ":")).encode()
    assert bodies[ids[1]][0]["message"]["attributes"] == {}
    assert base64.b64decode(bodies[ids[1]][0]["message"]["data"]) == b"\x00\xff"
    headers = endpoint.calls[0][2]
    assert headers["Content-Type"] == "application/json" and "Authorization" not in headers
    url = ready.ctx.resources.require_subscription(sub()).queue_url
    counts = aws.client("sqs", ready.ctx.config).get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    assert counts["Attributes"]["ApproximateNumberOfMessages"] == "0"
    assert counts["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0"  # deleted, not just in flight


def test_nack_reports_failure_and_delays_with_the_throttle(ready: Services, clock: FakeClock,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ids = publish(ready, msg(b"a"), msg(b"b"))
    changes: list[tuple[str, int]] = []
    original = ready.ctx.queues.change_visibility_batch
    monkeypatch.setattr(ready.ctx.queues, "change_visibility_batch",
                        lambda url, c: changes.extend(c) or original(url, c))
    event = sqs_event(ready)
    by_id = {json.loads(r["body"])["id"]: r["messageId"] for r in event["Records"]}
    endpoint = FakeEndpoint(500, 204)
    result = handler(ready, endpoint, clock).handle(event)
    first = json.loads(endpoint.calls[0][1])["message"]["messageId"]
    assert failures(result) == {by_id[first]}
    assert len(changes) == 1 and 1 <= changes[0][1] <= 2  # the throttle's pause after one nack, rounded up
    state = PushStore(ready.ctx.config).load_throttle(sub().path)
    assert state.nacks > 0.9 and state.acks > 0.9  # stored once for the batch
    assert first in ids


def test_retry_policy_sets_the_redelivery_delay(ready: Services, clock: FakeClock,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ready.admin.patch_subscription(sub(), update_subscription_request({
        "subscription": {"retryPolicy": {"minimumBackoff": "15s", "maximumBackoff": "100s"}},
        "updateMask": "retryPolicy"}, sub()))
    publish(ready, msg(b"a"))
    changes: list[tuple[str, int]] = []
    monkeypatch.setattr(ready.ctx.queues, "change_visibility_batch", lambda url, c: changes.extend(c) or [])
    event = sqs_event(ready)
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = "3"
    result = handler(ready, FakeEndpoint(503), clock).handle(event)
    assert len(failures(result)) == 1
    assert [c[1] for c in changes] == [60]  # 15 s * 2 ** (3 - 1)


def test_delivery_attempt_only_with_a_dead_letter_policy(ready: Services, clock: FakeClock) -> None:
    ready.admin.create_topic(names.make(P, "topics", "dead-letters"), Topic())
    ready.admin.create_subscription(sub("sub-dl"), subscription_request({
        "topic": topic().path, "pushConfig": {"pushEndpoint": HOOK},
        "deadLetterPolicy": {"deadLetterTopic": f"projects/{P}/topics/dead-letters", "maxDeliveryAttempts": 5}},
        sub("sub-dl")))
    clock.advance(1)
    publish(ready, msg(b"x", orderingKey="key-1"))
    endpoint = FakeEndpoint(204)
    handler(ready, endpoint, clock).handle(sqs_event(ready, sub("sub-dl")))
    handler(ready, endpoint, clock).handle(sqs_event(ready, sub()))
    with_dl, without = endpoint.messages()
    assert with_dl["deliveryAttempt"] == 1 and "deliveryAttempt" not in without
    assert list(with_dl) == ["message", "subscription", "deliveryAttempt"]
    assert with_dl["message"]["orderingKey"] == "key-1"
    assert list(with_dl["message"])[-1] == "orderingKey"


def test_no_wrapper_sends_raw_bytes_and_metadata_headers(ready: Services, clock: FakeClock) -> None:
    ready.admin.patch_subscription(sub(), update_subscription_request({"subscription": {"pushConfig": {
        "pushEndpoint": HOOK, "noWrapper": {"writeMetadata": True}}}, "updateMask": "pushConfig"}, sub()))
    ids = publish(ready, msg(b"\x01raw", attributes={"color": "blue", "bad key": "x", "Authorization": "no",
                                                     "note": "caf\u00e9 \u2603"}, orderingKey="k"))
    endpoint = FakeEndpoint(204)
    handler(ready, endpoint, clock).handle(sqs_event(ready))
    _, body, headers, _ = endpoint.calls[0]
    assert body == b"\x01raw"
    assert headers["x-goog-pubsub-message-id"] == ids[0]
    assert headers["x-goog-pubsub-subscription-name"] == sub().path
    assert headers["x-goog-pubsub-ordering-key"] == "k"
    assert headers["x-goog-pubsub-publish-time"].endswith("Z")
    assert headers["color"] == "blue"
    assert headers["note"].encode("latin-1").decode("utf-8") == "caf\u00e9 \u2603"  # UTF-8 bytes on the wire
    assert "bad key" not in headers and "Authorization" not in headers
    ready.admin.patch_subscription(sub(), update_subscription_request({"subscription": {"pushConfig": {
        "pushEndpoint": HOOK, "noWrapper": {}}}, "updateMask": "pushConfig"}, sub()))
    publish(ready, msg(b"plain", attributes={"color": "red"}))
    handler(ready, endpoint, clock).handle(sqs_event(ready))
    _, body, headers, _ = endpoint.calls[1]
    assert body == b"plain" and "color" not in headers and "x-goog-pubsub-message-id" not in headers


def test_oidc_token_verifies_against_the_jwks(ready: Services, clock: FakeClock) -> None:
    ready.admin.patch_subscription(sub(), update_subscription_request({"subscription": {"pushConfig": {
        "pushEndpoint": HOOK, "oidcToken": {"serviceAccountEmail": "pusher@example.iam"}}}, "updateMask": "pushConfig"},
        sub()))
    publish(ready, msg(b"secret"))
    endpoint = FakeEndpoint(204)
    handler(ready, endpoint, clock).handle(sqs_event(ready))
    token = endpoint.calls[0][2]["Authorization"].removeprefix("Bearer ")
    signer = token_signer(ready.ctx.config)
    assert signer is not None
    key = jwt.PyJWK(signer.jwks()["keys"][0]).key
    claims = jwt.decode(token, key, algorithms=["RS256"], audience=HOOK,
                        options={"verify_iat": False, "verify_exp": False})
    assert claims["email"] == "pusher@example.iam" and claims["iss"] == ready.ctx.config.public_url


def test_ordered_subscription_hands_back_the_rest_of_a_failed_key(ready: Services, clock: FakeClock,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ready.admin.create_subscription(sub("sub-ord"), subscription_request(
        {"topic": topic().path, "enableMessageOrdering": True, "pushConfig": {"pushEndpoint": HOOK}}, sub("sub-ord")))
    clock.advance(1)
    publish(ready, msg(b"k1-a", orderingKey="k1"), msg(b"k1-b", orderingKey="k1"), msg(b"k2-a", orderingKey="k2"))
    changes: list[tuple[str, int]] = []
    monkeypatch.setattr(ready.ctx.queues, "change_visibility_batch", lambda url, c: changes.extend(c) or [])

    def answer(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        seen.append(base64.b64decode(json.loads(body)["message"]["data"]))
        return 500 if seen[-1] == b"k1-a" else 204

    seen: list[bytes] = []
    event = sqs_event(ready, sub("sub-ord"))
    assert event["Records"][0]["eventSourceARN"].endswith(".fifo")
    result = PushDelivery(ready.ctx, post=answer, sleep=clock.advance).handle(event)
    assert b"k1-b" not in seen and b"k2-a" in seen
    assert len(failures(result)) == 2
    assert sorted(c[1] for c in changes)[0] == 0  # k1-b: back at once, behind k1-a in its group


def test_long_throttle_delay_defers_without_pushing(ready: Services, clock: FakeClock,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    throttle = PushThrottle()
    for i in range(12):
        throttle.record(False, clock() - 12 + i)
    PushStore(ready.ctx.config).save_throttle(sub().path, throttle.state)
    wait = throttle.delay(clock())
    assert wait > 10
    publish(ready, msg(b"a"), msg(b"b"))
    changes: list[tuple[str, int]] = []
    monkeypatch.setattr(ready.ctx.queues, "change_visibility_batch", lambda url, c: changes.extend(c) or [])
    endpoint = FakeEndpoint(204)
    result = handler(ready, endpoint, clock).handle(sqs_event(ready))
    assert endpoint.calls == [] and len(failures(result)) == 2
    assert {c[1] for c in changes} == {math.ceil(wait)}


def test_short_throttle_delay_is_waited_inline(ready: Services, clock: FakeClock) -> None:
    throttle = PushThrottle()
    throttle.record(False, clock())  # one nack: a pause of 0.6 s
    PushStore(ready.ctx.config).save_throttle(sub().path, throttle.state)
    publish(ready, msg(b"a"))
    endpoint = FakeEndpoint(204)
    start = clock()
    result = handler(ready, endpoint, clock).handle(sqs_event(ready))
    assert result == {"batchItemFailures": []} and len(endpoint.calls) == 1
    assert clock() - start == pytest.approx(0.6)


def test_healthy_batches_do_not_write_the_throttle(ready: Services, clock: FakeClock,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = PushStore(ready.ctx.config)
    store.save_throttle(sub().path, ThrottleState(acks=5.0, window=20.0, updated=clock()))
    saves: list[str] = []
    monkeypatch.setattr(PushStore, "save_throttle", lambda self, s, st: saves.append(s))
    publish(ready, *(msg(b"m%d" % i) for i in range(10)))
    handler(ready, FakeEndpoint(204), clock).handle(sqs_event(ready))
    assert saves == []


def test_switched_to_pull_hands_messages_back_at_once(ready: Services, clock: FakeClock) -> None:
    publish(ready, msg(b"a"))
    event = sqs_event(ready)
    ready.admin.modify_push_config(sub(), ModifyPushConfigRequest(PushConfig()))
    endpoint = FakeEndpoint(204)
    delivery = handler(ready, endpoint, clock)
    result = delivery.handle(event)
    assert endpoint.calls == [] and len(failures(result)) == 1
    pulled = ready.pull.pull(sub(), PullRequest(5, True)).to_wire()["receivedMessages"]
    assert base64.b64decode(pulled[0]["message"]["data"]) == b"a"


def test_large_bodies_are_read_from_s3(ready: Services, clock: FakeClock) -> None:
    big = bytes(range(256)) * 400
    publish(ready, msg(big), msg(b"small"))
    event = sqs_event(ready)
    assert any('"s3"' in r["body"] for r in event["Records"])
    endpoint = FakeEndpoint(204)
    handler(ready, endpoint, clock).handle(event)
    assert sorted(len(base64.b64decode(m["message"]["data"])) for m in endpoint.messages()) == [5, len(big)]


def test_timeout_is_the_ack_deadline_capped_by_configuration(ready: Services, clock: FakeClock) -> None:
    publish(ready, msg(b"a"))
    endpoint = FakeEndpoint(None)  # None: the request timed out
    result = handler(ready, endpoint, clock).handle(sqs_event(ready))
    assert len(failures(result)) == 1
    assert 9.0 <= endpoint.calls[0][3] <= 9.5  # 10 s deadline less the margin and the time already spent


def test_requests_per_message(ready: Services, clock: FakeClock) -> None:
    """AWS requests the handler makes per pushed message (healthy endpoint, batches of 10)."""
    publish(ready, *(msg(b"m%d" % i) for i in range(100)))
    delivery = handler(ready, FakeEndpoint(204), clock)
    delivery.handle(sqs_event(ready, n=10))  # warm: first throttle write, caches
    calls: list[str] = []
    for service in ("dynamodb", "sqs", "s3"):
        aws.client(service, ready.ctx.config).meta.events.register(
            "before-call.*.*", lambda model, **_: calls.append(model.name))
    events = [sqs_event(ready, n=10) for _ in range(9)]
    receives = len(calls)
    calls.clear()
    for event in events:
        assert delivery.handle(event) == {"batchItemFailures": []}
    per_message = len(calls) / 90
    print(f"push handler: {per_message:.2f} AWS requests per message ({sorted(set(calls))}); "
          f"receives {receives / 90:.2f}/message")
    assert per_message <= 0.25  # one GetItem (throttle) + one DeleteMessageBatch per batch of 10


def test_past_max_delivery_attempts_goes_to_the_dead_letter_topic(ready: Services, clock: FakeClock) -> None:
    dead = names.make(P, "topics", "dead-letters")
    ready.admin.create_topic(dead, Topic())
    ready.admin.create_subscription(sub("dl-reader"), subscription_request({"topic": dead.path}, sub("dl-reader")))
    ready.admin.patch_subscription(sub(), update_subscription_request({"subscription": {"deadLetterPolicy": {
        "deadLetterTopic": dead.path, "maxDeliveryAttempts": 5}}, "updateMask": "deadLetterPolicy"}, sub()))
    clock.advance(1)
    [mid] = publish(ready, msg(b"poison", attributes={"k": "v"}))
    event = sqs_event(ready)
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = "6"
    endpoint = FakeEndpoint(204)
    assert handler(ready, endpoint, clock).handle(event) == {"batchItemFailures": []}
    assert endpoint.calls == []
    stream = stream_event(ready)
    stream["Records"] = [r for r in stream["Records"] if entry_from_item(r["dynamodb"]["NewImage"]).topic == dead.path]
    FanOut(ready.ctx).handle(stream)
    [got] = ready.pull.pull(sub("dl-reader"), PullRequest(5, True)).to_wire()["receivedMessages"]
    assert base64.b64decode(got["message"]["data"]) == b"poison"
    assert got["message"]["attributes"]["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert got["message"]["attributes"]["k"] == "v" and mid
