"""The deployed path of a wide topic's fan-out on moto: the stream handler invokes its own function once per slice
(Lambda's asynchronous Invoke, not the local queue), and each slice run counts itself done, so that the IAM gate of
``make test`` (infra/iam_gate.py) measures those calls under the fan-out function."""

from __future__ import annotations

import pytest

from chalicelib import runtime
from chalicelib.api.parsing import publish_request, subscription_request
from chalicelib.core import fanout_slices, names
from chalicelib.core.wire.models import Topic
from chalicelib.delivery import event_handlers
from chalicelib.store.log import entry_from_item
from tests.functional.conftest import stream_event
from tests.functional.test_deployed_paths import _function, stage  # noqa: F401 (the deployed stage's fixture)

P = "wide-paths"
TOPIC = names.make(P, "topics", "wide")


def test_the_stream_invokes_its_own_function_per_slice_and_the_last_slice_marks_the_request(
        stage: None, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("METRO_FANOUT_SLICE_SUBSCRIPTIONS", "1")
    runtime.reset()
    svc = runtime.services()
    role = "arn:aws:iam::123456789012:role/metro-iam-test"
    _function(svc.ctx.config.fanout_function, role)
    svc.admin.create_topic(TOPIC, Topic())
    subs = [names.make(P, "subscriptions", f"sub-{i}") for i in range(2)]
    for s in subs:
        svc.admin.create_subscription(s, subscription_request({"topic": TOPIC.path}, s))
    svc.publish.publish(TOPIC, publish_request({"messages": [{"data": "eA=="}]}))
    records = stream_event(svc)

    runtime.reset()  # the fan-out function's own first invocation
    assert event_handlers.fanout(records)["batchItemFailures"] == []
    ctx = runtime.services().ctx
    entry = entry_from_item(records["Records"][-1]["dynamodb"]["NewImage"])
    live, _ = ctx.resources.topic_subscriptions(TOPIC.path)
    plan = fanout_slices.split(live, 1)
    assert len(plan.slices) == 2
    ran = [event_handlers.fanout(fanout_slices.slice_event(entry, part)) for part in plan.slices]
    assert [r["last"] for r in ran] == [False, True] and all(r["sent"] == 1 for r in ran)
