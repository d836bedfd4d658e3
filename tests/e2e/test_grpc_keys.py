"""The gRPC edge in keys mode, and a lease held past the ack deadline.

In keys mode a gRPC call carries its token as metadata (``authorization: Bearer`` here, as Google's clients send
credentials): the same users, roles and 401/403 as over REST. A message whose callback takes longer than the
subscription's ack deadline is not redelivered: the subscriber's lease manager extends it over the stream's
unary ModifyAckDeadline calls."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

from tests.e2e.test_grpc_clients import Clients, Collector
from tests.stack import RunningStack, keys_mode_stack

pytestmark = pytest.mark.e2e
ADMIN_KEY = secrets.token_urlsafe(32)
PROJECT = "grpc-keys"


class _Token(grpc.UnaryUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):  # type: ignore[misc]
    """Adds ``authorization: Bearer <token>`` to every call, as a credentials plugin would."""

    def __init__(self, token: str) -> None:
        self.token = token

    def _with_token(self, details: Any) -> Any:
        metadata = [*(details.metadata or []), ("authorization", f"Bearer {self.token}")]
        return details._replace(metadata=metadata) if hasattr(details, "_replace") else _Details(details, metadata)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_token(details), request)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._with_token(details), requests)


class _Details(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, details: Any, metadata: list[tuple[str, str]]) -> None:
        self.method, self.timeout, self.metadata = details.method, details.timeout, metadata
        self.credentials, self.wait_for_ready = details.credentials, details.wait_for_ready
        self.compression = getattr(details, "compression", None)


def clients(host: str, token: str) -> tuple[Any, Any]:
    channel = grpc.intercept_channel(grpc.insecure_channel(host), _Token(token))
    return (pubsub_v1.PublisherClient(transport=PublisherGrpcTransport(channel=channel)),
            pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(channel=channel)))


@pytest.fixture(scope="module")
def keys_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with keys_mode_stack(tmp_path_factory.mktemp("grpc-keys"), ADMIN_KEY) as running:
        yield running


def rest(stack: RunningStack, method: str, path: str, body: Any = None) -> Any:
    answer = requests.request(method, stack.url + path, json=body, headers={"x-api-key": ADMIN_KEY}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_tokens_roles_and_errors_over_grpc(keys_stack: RunningStack) -> None:
    rest(keys_stack, "POST", f"/v1/projects/{PROJECT}", {})
    topic, sub = f"projects/{PROJECT}/topics/orders", f"projects/{PROJECT}/subscriptions/billing"
    tokens = {name: rest(keys_stack, "POST", f"/v1/users/{name}", {"projects": [{"project": PROJECT, "roles": [role]}]})
              ["token"] for name, role in (("boss", "project_admin"), ("pub", "publisher"), ("con", "consumer"))}
    boss_pub, boss_sub = clients(keys_stack.host, tokens["boss"])
    boss_pub.create_topic(name=topic)
    boss_sub.create_subscription(name=sub, topic=topic)
    boss_pub.set_iam_policy(request={"resource": topic, "policy": {"bindings": [
        {"role": "roles/pubsub.publisher", "members": ["user:pub"]}]}})
    boss_sub.set_iam_policy(request={"resource": sub, "policy": {"bindings": [
        {"role": "roles/pubsub.subscriber", "members": ["user:con"]}]}})
    publisher, _ = clients(keys_stack.host, tokens["pub"])
    sent = publisher.publish(topic, b"with a token").result(timeout=30)
    consumer_pub, consumer = clients(keys_stack.host, tokens["con"])
    with pytest.raises(gexc.PermissionDenied):
        consumer_pub.publish(topic, b"not a publisher").result(timeout=30)
    seen = Collector()
    future = consumer.subscribe(sub, seen)
    try:
        assert seen.until(1, timeout=60)
        assert list(seen.seen) == [sent]
    finally:
        future.cancel()
    nobody_pub, _ = clients(keys_stack.host, "not-a-token")
    with pytest.raises(gexc.Unauthenticated):
        nobody_pub.get_topic(topic=topic)
    denied = publisher_subscribe(clients(keys_stack.host, tokens["pub"])[1], sub)
    with pytest.raises(gexc.PermissionDenied):
        denied.result(timeout=60)  # a StreamingPull without the right ends subscribe() at once


def publisher_subscribe(subscriber: Any, sub: str) -> Any:
    return subscriber.subscribe(sub, lambda m: m.ack())


def test_a_lease_held_past_the_ack_deadline_is_extended(stack: RunningStack) -> None:
    grpc_clients = Clients(stack.host)
    topic, sub = f"projects/{PROJECT}/topics/slow-{secrets.token_hex(3)}", f"projects/{PROJECT}/subscriptions/slow"
    sub += "-" + topic.rsplit("-", 1)[1]
    grpc_clients.publisher.create_topic(name=topic)
    grpc_clients.subscriber.create_subscription(name=sub, topic=topic, ack_deadline_seconds=10)
    grpc_clients.publisher.publish(topic, b"slow work").result(timeout=30)
    acked = threading.Event()

    def finish(message: Any) -> None:
        message.ack()
        acked.set()

    holding: Callable[[Any], None] = lambda m: threading.Timer(16, finish, args=(m,)).start()  # noqa: E731
    seen = Collector(holding)
    future = grpc_clients.subscriber.subscribe(sub, seen)
    try:
        assert acked.wait(60)
        with seen.changed:  # no redelivery while it was held, nor after the ack: bounded by the next pull
            seen.changed.wait_for(lambda: max(seen.seen.values()) > 1, 12)
        assert list(seen.seen.values()) == [1]
    finally:
        future.cancel()
