"""Push subscriptions made and changed by the Google client libraries, delivered by the stack of `make run`.

- google-cloud-pubsub (``transport="rest"``): a push subscription with ``oidc_token`` and ``no_wrapper``
  (write_metadata), then ``modify_push_config`` to a wrapped endpoint, to pull and back to push;
- google-api-python-client (discovery): ``create`` with ``pushConfig`` and ``modifyPushConfig``.

The webhook runs in this process (tests/webhooks.py). A warm push handler trusts its
copy of a subscription for 2 s, so after a change each test waits that long before publishing.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1

from tests.stack import RunningStack
from tests.webhooks import Hook, Webhook

pytestmark = pytest.mark.e2e
PROJECT = "e2e-push-clients"
EMAIL = "pusher@metro.example"
CACHE_WAIT = 2.5  # > the push handler's 2 s subscription cache (chalicelib/delivery/push.py CACHE_TTL)


@pytest.fixture(scope="module")
def clients(stack: RunningStack) -> tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]:
    options = {"api_endpoint": stack.url}
    return (pubsub_v1.PublisherClient(transport="rest", client_options=options, credentials=AnonymousCredentials()),
            pubsub_v1.SubscriberClient(transport="rest", client_options=options, credentials=AnonymousCredentials()))


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    server = Webhook()
    yield server
    server.close()


def verified_claims(stack: RunningStack, authorization: str, audience: str) -> dict[str, Any]:
    """The token's claims, checked with PyJWT against the keys Metro serves at its JWKS URL."""
    token = authorization.removeprefix("Bearer ")
    key = jwt.PyJWKClient(f"{stack.url}/v1/jwks").get_signing_key_from_jwt(token)
    return dict(jwt.decode(token, key.key, algorithms=["RS256"], audience=audience, issuer=stack.url))


def raw_ids(hook: Hook) -> list[str]:
    return [r.headers.get("x-goog-pubsub-message-id", "") for r in list(hook.requests)]


def pull_until(subscriber: pubsub_v1.SubscriberClient, name: str, message_id: str) -> list[str]:
    """Pull and ack until ``message_id`` arrives (or 30 s pass); the ids pulled on the way."""
    pulled: list[str] = []
    end = time.monotonic() + 30
    while message_id not in pulled and time.monotonic() < end:
        resp = subscriber.pull(request={"subscription": name, "max_messages": 10}, timeout=30)
        if resp.received_messages:
            pulled += [m.message.message_id for m in resp.received_messages]
            subscriber.acknowledge(request={"subscription": name,
                                            "ack_ids": [m.ack_id for m in resp.received_messages]})
    return pulled


def test_google_client_creates_and_modifies_a_push_subscription(
    stack: RunningStack, clients: tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient],
    webhook: Webhook, unique: str,
) -> None:
    publisher, subscriber = clients
    topic = publisher.topic_path(PROJECT, f"gc-{unique}")
    publisher.create_topic(name=topic)
    raw = webhook.hook(204, name="raw")
    name = subscriber.subscription_path(PROJECT, f"gc-{unique}")

    # 1. create: authenticated push of the raw bytes, metadata in headers
    created = subscriber.create_subscription(request={"name": name, "topic": topic, "push_config": {
        "push_endpoint": raw.url,
        "oidc_token": {"service_account_email": EMAIL, "audience": "https://receiver.example"},
        "no_wrapper": {"write_metadata": True}}})
    assert created.push_config.push_endpoint == raw.url
    assert created.push_config.oidc_token.service_account_email == EMAIL
    assert created.push_config.oidc_token.audience == "https://receiver.example"
    assert created.push_config.no_wrapper.write_metadata is True
    assert subscriber.get_subscription(request={"subscription": name}).push_config == created.push_config

    first = publisher.publish(topic, b"raw \x00\xff bytes", colour="blue").result(timeout=30)
    [got] = raw.wait_for(1, 20)[:1]
    assert got.body == b"raw \x00\xff bytes"
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["x-goog-pubsub-message-id"] == first
    assert got.headers["x-goog-pubsub-subscription-name"] == name
    assert got.headers["x-goog-pubsub-publish-time"].endswith("Z")
    assert got.headers["colour"] == "blue"
    claims = verified_claims(stack, got.headers["authorization"], "https://receiver.example")
    assert claims["email"] == EMAIL and claims["sub"] == EMAIL

    # 2. modify_push_config: another endpoint, the JSON wrapper, no token
    wrapped = webhook.hook(204, name="wrapped")
    subscriber.modify_push_config(request={"subscription": name, "push_config": {"push_endpoint": wrapped.url}})
    now = subscriber.get_subscription(request={"subscription": name}).push_config
    assert now.push_endpoint == wrapped.url and not now.no_wrapper.write_metadata and not now.oidc_token.audience
    time.sleep(CACHE_WAIT)
    second = publisher.publish(topic, b"wrapped", colour="red").result(timeout=30)
    [got] = wrapped.wait_for(1, 20)[:1]
    body = got.json()
    assert body["subscription"] == name and body["message"]["messageId"] == second
    assert base64.b64decode(body["message"]["data"]) == b"wrapped"
    assert body["message"]["attributes"] == {"colour": "red"}
    assert "authorization" not in got.headers
    assert second not in raw_ids(raw)

    # 3. an empty push config turns it into a pull subscription
    subscriber.modify_push_config(request={"subscription": name, "push_config": {}})
    assert subscriber.get_subscription(request={"subscription": name}).push_config.push_endpoint == ""
    time.sleep(CACHE_WAIT)
    third = publisher.publish(topic, b"pulled").result(timeout=30)
    assert third in pull_until(subscriber, name, third)
    assert third not in wrapped.ids() and third not in raw_ids(raw)

    # 4. and a URL turns it back into a push subscription
    subscriber.modify_push_config(request={"subscription": name, "push_config": {"push_endpoint": wrapped.url}})
    time.sleep(CACHE_WAIT)
    fourth = publisher.publish(topic, b"pushed again").result(timeout=30)
    wrapped.wait_for(2, 20)
    assert list(dict.fromkeys(wrapped.ids())) == [second, fourth]  # at-least-once: a duplicate is allowed


def test_discovery_client_creates_and_modifies_a_push_subscription(
    stack: RunningStack, discovery: Any, webhook: Webhook, unique: str,
) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic = f"projects/{PROJECT}/topics/disc-{unique}"
    name = f"projects/{PROJECT}/subscriptions/disc-{unique}"
    topics.create(name=topic, body={}).execute()
    raw = webhook.hook(204, name="disc-raw")
    created = subs.create(name=name, body={"topic": topic, "pushConfig": {
        "pushEndpoint": raw.url, "noWrapper": {"writeMetadata": False}}}).execute()
    assert created["pushConfig"]["pushEndpoint"] == raw.url and "noWrapper" in created["pushConfig"]

    def publish(data: bytes) -> str:
        body = {"messages": [{"data": base64.b64encode(data).decode(), "attributes": {"k": "v"}}]}
        [mid] = topics.publish(topic=topic, body=body).execute()["messageIds"]
        return str(mid)

    publish(b"just the bytes")
    [got] = raw.wait_for(1, 20)[:1]
    assert got.body == b"just the bytes"
    assert not any(h.startswith("x-goog-pubsub-") for h in got.headers)  # writeMetadata false: no metadata

    signed = webhook.hook(204, name="disc-signed")
    assert subs.modifyPushConfig(subscription=name, body={"pushConfig": {
        "pushEndpoint": signed.url, "oidcToken": {"serviceAccountEmail": EMAIL}}}).execute() == {}
    config = subs.get(subscription=name).execute()["pushConfig"]
    assert config["pushEndpoint"] == signed.url and config["oidcToken"]["serviceAccountEmail"] == EMAIL
    assert "noWrapper" not in config
    time.sleep(CACHE_WAIT)
    mid = publish(b"signed and wrapped")
    [got] = signed.wait_for(1, 20)[:1]
    assert got.message_id == mid and got.json()["subscription"] == name
    claims = verified_claims(stack, got.headers["authorization"], signed.url)  # audience: the endpoint URL
    assert claims["email"] == EMAIL
    assert len(raw.requests) == 1
