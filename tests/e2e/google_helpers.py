"""Fixtures and helpers of the Google client end-to-end tests (test_google_*.py).

Over REST, google-api-core maps errors by HTTP status, so INVALID_ARGUMENT arrives as
``BadRequest`` (400) and ALREADY_EXISTS as ``Conflict`` (409), exactly as against Google itself;
the gRPC status string is checked in the error body.
"""

from __future__ import annotations

import os
import time

from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage, ReceivedMessage

PROJECT = "e2e-project"
DELETED_TOPIC = "_deleted-topic_"


def grpc_clients(host: str) -> tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]:
    """google-cloud-pubsub's clients on an insecure gRPC channel to ``host`` (PUBSUB_EMULATOR_HOST while they are
    made; the e2e tests otherwise run without it, so that REST clients keep their client_options)."""
    saved = os.environ.get("PUBSUB_EMULATOR_HOST")
    os.environ["PUBSUB_EMULATOR_HOST"] = host
    try:
        return pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    finally:
        if saved is None:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        else:
            os.environ["PUBSUB_EMULATOR_HOST"] = saved


def topic_path(rid: str, project: str = PROJECT) -> str:
    return f"projects/{project}/topics/{rid}"


def sub_path(rid: str, project: str = PROJECT) -> str:
    return f"projects/{project}/subscriptions/{rid}"


def google_status(err: gexc.GoogleAPICallError) -> str:
    """The gRPC status string in the Google error body of a REST failure."""
    assert err.response is not None
    body = err.response.json()
    assert set(body["error"]) >= {"code", "message", "status"}
    assert body["error"]["code"] == err.code
    return str(body["error"]["status"])


def pull_n(subscriber: pubsub_v1.SubscriberClient, sub: str, n: int, timeout: float = 15.0,
           max_messages: int = 1000) -> list[ReceivedMessage]:
    """Pull until ``n`` messages arrived (fan-out is asynchronous); never acknowledges."""
    got: list[ReceivedMessage] = []
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        resp = subscriber.pull(subscription=sub, max_messages=min(max_messages, n - len(got)),
                               return_immediately=False)
        got.extend(resp.received_messages)
    assert len(got) == n, f"expected {n} messages on {sub}, got {len(got)}"
    return got


def pull_nothing(subscriber: pubsub_v1.SubscriberClient, sub: str) -> None:
    resp = subscriber.pull(subscription=sub, max_messages=10, return_immediately=True)
    assert list(resp.received_messages) == []


def assert_drained(subscriber: pubsub_v1.SubscriberClient, gapic: GapicPublisher, topic: str, subs: list[str],
                   timeout: float = 15.0) -> None:
    """Nothing but a fresh marker is deliverable on ``subs`` (subscriptions of ``topic``).

    The marker is the positive control: the same pulls that find nothing else do receive it, so the check
    cannot pass because pulls return nothing at all. The marker is acknowledged, leaving ``subs`` empty.
    """
    [marker] = gapic.publish(topic=topic, messages=[PubsubMessage(data=b"drain marker")]).message_ids
    for sub in subs:
        got: list[ReceivedMessage] = []
        end = time.monotonic() + timeout
        while marker not in {m.message.message_id for m in got} and time.monotonic() < end:
            got.extend(subscriber.pull(subscription=sub, max_messages=10, return_immediately=False).received_messages)
        assert [m.message.message_id for m in got] == [marker], f"{sub} held more than the marker"
        subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got])
        pull_nothing(subscriber, sub)  # and the same pull that found the marker finds nothing more


# == google-cloud-pubsub, REST transport: administration =============================================
