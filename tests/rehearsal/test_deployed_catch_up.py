"""Fan-out down, then back: with the stream mapping disabled, a wide topic's publish reaches no subscription; the
maintenance function's catch-up (invoked by hand, as docs/operations.md says to once fan-out is back) delivers it
to every one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from chalicelib.config import Config
from tests.e2e.google_helpers import pull_n, pull_nothing
from tests.rehearsal.conftest import PROJECT, Deployed
from tests.rehearsal.test_deployed_core import invoke_maintenance, publish


@pytest.fixture
def fanout_down(deployed: Deployed) -> Iterator[None]:
    lam = boto3.client("lambda")
    (mapping,) = lam.list_event_source_mappings(FunctionName=deployed.names.function("fanout"))["EventSourceMappings"]
    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    try:
        yield
    finally:
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)


def test_the_catch_up_delivers_what_the_stream_did_not(deployed: Deployed, gapic: Any, publisher: Any,
                                                        subscriber: Any, unique: str, fanout_down: None) -> None:
    count = Config().direct_fanout_max_subscriptions + 1  # wider than publish fans out itself
    topic = publisher.create_topic(name=f"projects/{PROJECT}/topics/outage-{unique}").name
    subs = [f"projects/{PROJECT}/subscriptions/outage-{unique}-{i}" for i in range(count)]
    for name in subs:
        subscriber.create_subscription(name=name, topic=topic)
    [sent] = publish(gapic, topic, {"data": b"while fan-out was down"})
    pull_nothing(subscriber, subs[0])
    assert invoke_maintenance(deployed)["fannedOut"] == 0  # a scheduled run waits a quarter of an hour
    assert invoke_maintenance(deployed, catchUpAfterSeconds=0)["fannedOut"] >= 1
    for name in subs:
        [got] = pull_n(subscriber, name, 1, timeout=30)
        assert got.message.message_id == sent
        subscriber.acknowledge(subscription=name, ack_ids=[got.ack_id])
