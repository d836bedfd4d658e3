"""The gRPC edge as the opt-in stack runs it: the container's entry point (``python -m chalicelib.container``),
started by infra/rehearse.py with the environment infra/grpc_stack.py gives the task (the API function's: the
stage's names, keys mode, secrets from SSM Parameter Store), against the rehearsed stage.

google-cloud-pubsub over gRPC, publishing and subscribing with ``subscribe()`` (StreamingPull) with the stage's
admin token. Deployed, clients reach the edge over TLS through the load balancer, which ends TLS and forwards h2c;
here the token travels on a loopback channel (gRPC's local channel credentials, on which it sends call credentials
without TLS). ``PUBSUB_EMULATOR_HOST`` alone, as against Google's emulator, sends no token: keys mode refuses it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import google.auth.transport.grpc
import google.auth.transport.requests
import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.e2e.google_helpers import assert_drained
from tests.rehearsal.conftest import Deployed

HOST = os.environ.get("METRO_REHEARSAL_GRPC", "")
pytestmark = pytest.mark.skipif(not HOST, reason="`make rehearse` starts the gRPC edge (METRO_REHEARSAL_GRPC)")


def channel(token: str) -> grpc.Channel:
    """A channel to the edge that sends ``token`` as a bearer token, as google-cloud-pubsub does with
    ``credentials=Credentials(token)`` against the load balancer's HTTPS listener."""
    bearer = grpc.metadata_call_credentials(google.auth.transport.grpc.AuthMetadataPlugin(
        Credentials(token), google.auth.transport.requests.Request()))
    local = grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP)
    return grpc.secure_channel(HOST, grpc.composite_channel_credentials(local, bearer))


@pytest.fixture(scope="module")
def grpc_publisher(deployed: Deployed) -> Any:
    return pubsub_v1.PublisherClient(transport=PublisherGrpcTransport(channel=channel(deployed.admin_key)))


@pytest.fixture(scope="module")
def grpc_subscriber(deployed: Deployed) -> Iterator[Any]:
    client = pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(channel=channel(deployed.admin_key)))
    yield client
    client.close()


class Received:
    """What a ``subscribe()`` callback acknowledged; ``until(ids)`` waits (bounded) for all of them."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.changed = threading.Condition()

    def __call__(self, message: Any) -> None:
        message.ack()  # first: once until() returns, every acknowledgement is on its way
        with self.changed:
            self.data[message.message_id] = message.data
            self.changed.notify_all()

    def until(self, ids: set[str], timeout: float = 60) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: ids <= set(self.data), timeout)


def streamed(subscriber: Any, sub: str, ids: set[str]) -> dict[str, bytes]:
    """The messages ``subscribe()`` delivers on a StreamingPull until it has every one of ``ids``."""
    received = Received()
    future = subscriber.subscribe(sub, received)
    try:
        assert received.until(ids), f"{len(ids & set(received.data))} of {len(ids)} over the stream"
    finally:
        future.cancel()
        future.result(timeout=30)
    return received.data


def test_the_load_balancers_health_check_answers_serving() -> None:
    """The target group's check: ``/grpc.health.v1.Health/Check`` for the server (service "") answers SERVING
    (gRPC status 0), with no token."""
    with grpc.insecure_channel(HOST) as plain:
        answer = health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_publish_and_subscribe_over_grpc(grpc_publisher: Any, grpc_subscriber: Any, subscriber: Any, gapic: Any,
                                         topic: str, sub: str) -> None:
    """Published and streamed through the edge, and acknowledged: nothing but a fresh marker is left for pulls
    through API Gateway, so both paths share the stage's tables and queues."""
    futures = [grpc_publisher.publish(topic, f"g{i}".encode(), i=str(i)) for i in range(20)]
    ids = {f.result(timeout=60) for f in futures}
    assert len(ids) == 20
    data = streamed(grpc_subscriber, sub, ids)
    assert {data[i] for i in ids} == {f"g{i}".encode() for i in range(20)}
    assert_drained(subscriber, gapic, topic, [sub])


def test_a_message_published_through_api_gateway_arrives_on_a_stream(gapic: Any, grpc_subscriber: Any,
                                                                     topic: str, sub: str) -> None:
    from google.pubsub_v1 import PubsubMessage

    body = bytes(range(256)) * 400  # 100 KiB: the body is read from the stage's bucket
    [sent] = gapic.publish(topic=topic, messages=[PubsubMessage(data=body)]).message_ids
    assert streamed(grpc_subscriber, sub, {sent})[sent] == body


def test_keys_mode_holds_on_the_grpc_edge(monkeypatch: pytest.MonkeyPatch, topic: str) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", HOST)  # as against Google's emulator: no credentials at all
    anonymous = pubsub_v1.PublisherClient()
    with pytest.raises(gexc.Unauthenticated):
        anonymous.get_topic(topic=topic, timeout=30)
    unknown = pubsub_v1.PublisherClient(transport=PublisherGrpcTransport(channel=channel("not-a-token-" * 4)))
    with pytest.raises(gexc.Unauthenticated):
        unknown.get_topic(topic=topic, timeout=30)
