"""A seek over the inline limit through google-cloud-pubsub (REST) against a local stack whose limit is small:
the call answers, the seek worker (the local pump playing Lambda's asynchronous invocation) completes it in
chunks, :seekStatus shows it, and the retained set comes back exactly once."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage

from tests.e2e.google_helpers import pull_n, pull_nothing
from tests.stack import RunningStack, start_stack

pytestmark = pytest.mark.e2e
PROJECT = "e2e-seek-background"
REQUESTS, PER_REQUEST = 8, 5


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningStack, Any, Any]]:
    """A stack whose seeks go to the background past 5 messages (chunks of 10), with a publisher (one call, one
    request) and a subscriber on it."""
    limits = {"METRO_SEEK_INLINE_MAX_MESSAGES": "5", "METRO_SEEK_CHUNK_MESSAGES": "10"}
    running = start_stack(tmp_path_factory.mktemp("seek-bg") / "metro.log", limits)
    opts, anonymous = {"api_endpoint": running.url}, AnonymousCredentials()
    try:
        yield (running, GapicPublisher(transport="rest", client_options=opts, credentials=anonymous),
               pubsub_v1.SubscriberClient(transport="rest", client_options=opts, credentials=anonymous))
    finally:
        running.stop()


def seek_status(stack: RunningStack, sub: str) -> dict[str, Any]:
    resp = requests.get(f"{stack.url}/v1/{sub}:seekStatus", timeout=10)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["seek"])


def until_done(stack: RunningStack, sub: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (status := seek_status(stack, sub))["state"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    return status


def test_a_large_seek_returns_at_once_and_completes_in_the_background(small: tuple[RunningStack, Any, Any]) -> None:
    small_stack, gapic, subscriber = small
    topic, sub = f"projects/{PROJECT}/topics/big-topic", f"projects/{PROJECT}/subscriptions/big-sub"
    gapic.create_topic(name=topic)
    subscriber.create_subscription(request={"name": sub, "topic": topic, "retain_acked_messages": True})
    before = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
    sent = [f"m{r}-{i}" for r in range(REQUESTS) for i in range(PER_REQUEST)]
    for r in range(REQUESTS):
        gapic.publish(topic=topic, messages=[PubsubMessage(data=d.encode()) for d in sent[r * PER_REQUEST:]
                                             [:PER_REQUEST]])
    got = pull_n(subscriber, sub, len(sent))
    held, done = got[0], got[1:]
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in done])

    subscriber.seek(request={"subscription": sub, "time": before})
    assert seek_status(small_stack, sub)["background"] is True
    status = until_done(small_stack, sub)
    assert status["state"] == "SUCCEEDED" and status["restoredMessages"] == str(len(sent))

    subscriber.acknowledge(subscription=sub, ack_ids=[held.ack_id])  # an ack id of the old generation: ignored
    again = pull_n(subscriber, sub, len(sent))
    assert sorted(m.message.data.decode() for m in again) == sorted(sent)
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in again])
    pull_nothing(subscriber, sub)
