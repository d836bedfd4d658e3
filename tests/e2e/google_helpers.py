"""Fixtures and helpers of the Google client end-to-end tests (test_google_*.py).

Over REST, google-api-core maps errors by HTTP status, so INVALID_ARGUMENT arrives as
``BadRequest`` (400) and ALREADY_EXISTS as ``Conflict`` (409), exactly as against Google itself;
the gRPC status string is checked in the error body.
"""

from __future__ import annotations

import time

from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.pubsub_v1 import ReceivedMessage

PROJECT = "e2e-project"
DELETED_TOPIC = "_deleted-topic_"


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


# == google-cloud-pubsub, REST transport: administration =============================================
