"""A topic wider than METRO_FANOUT_SLICE_SUBSCRIPTIONS: the stream hands its subscriptions to parallel slices
(asynchronous invocations of the fan-out function, queued in ``ctx.invoker.pending`` locally) and every
subscription gets every message; a slice that fails is retried alone, and one that never succeeds is caught up."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request, subscription_request
from chalicelib.core.errors import Unavailable
from chalicelib.core.fanout_slices import SLICE_EVENT
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.maintenance import catch_up_fanout
from chalicelib.runtime import Services
from chalicelib.store.call_record import acting_as
from chalicelib.store.queues import SendResult
from tests.functional.conftest import FakeClock, stream_event
from tests.functional.test_fanout_catch_up import unfanned_count
from tests.functional.test_message_path import sub, topic

SLICE = 2  # subscriptions per slice
PLAIN = [f"sub-{i}" for i in range(5)]  # three slices: 2 + 2 + 1


@pytest.fixture
def wide(services: Services, clock: FakeClock) -> Services:
    """Direct fan-out off (the stream does it all), slices of two subscriptions."""
    config = dataclasses.replace(services.ctx.config, direct_fanout=False, fanout_slice_subscriptions=SLICE,
                                 fanout_catchup_seconds=900)
    built = Services.build(dataclasses.replace(services.ctx, config=config))
    built.admin.create_topic(topic(), Topic())
    for name in PLAIN:
        built.admin.create_subscription(sub(name), subscription_request({"topic": topic().path}, sub(name)))
    clock.advance(1)
    return built


def publish(services: Services, datas: list[bytes], key: str = "") -> list[str]:
    msgs = [{"data": base64.b64encode(d).decode(), **({"orderingKey": key} if key else {})} for d in datas]
    return list(services.publish.publish(topic(), publish_request({"messages": msgs})).message_ids)


def pulled(services: Services, name: str) -> list[str]:
    got = services.pull.pull(sub(name), PullRequest(100, True)).to_wire().get("receivedMessages", [])
    return [m["message"]["messageId"] for m in got]


def pending_slices(services: Services) -> list[dict[str, Any]]:
    out = []
    while not services.ctx.invoker.pending.empty():
        function, event = services.ctx.invoker.pending.get()
        assert function == services.ctx.config.fanout_function
        out.append(event)
    return out


def run_slice(services: Services, event: dict[str, Any]) -> dict[str, Any]:
    with acting_as("fanout"):
        return FanOut(services.ctx).run_slice(event)


def fan_out_stream(services: Services) -> None:
    assert FanOut(services.ctx).handle(stream_event(services)) == {"batchItemFailures": []}


def test_every_subscription_gets_every_message_once_and_a_failed_slice_is_retried_alone(
        wide: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = publish(wide, [b"a", b"b", b"c"])
    fan_out_stream(wide)
    slices = pending_slices(wide)
    assert sorted(len(e[SLICE_EVENT]["subscriptions"]) for e in slices) == [1, 2, 2]
    assert unfanned_count(wide) == 1  # no slice has run yet
    assert all(pulled(wide, name) == [] for name in PLAIN)  # the lane itself sent nothing

    real = wide.ctx.queues.send_all
    failures = iter([True])

    def fails_once(jobs: Any) -> list[SendResult]:
        if next(failures, False):
            return [SendResult(failed=list(range(len(msgs)))) for _, msgs in jobs]
        return real(jobs)

    monkeypatch.setattr(wide.ctx.queues, "send_all", fails_once)
    first, *others = slices
    with pytest.raises(Unavailable):
        run_slice(wide, first)
    assert [run_slice(wide, e)["last"] for e in others] == [False, False]
    assert unfanned_count(wide) == 1  # the failed slice is still pending
    assert run_slice(wide, first)["last"]  # Lambda's retry of that one invocation
    assert unfanned_count(wide) == 0
    for name in PLAIN:
        assert sorted(pulled(wide, name)) == sorted(ids), name


def test_a_stream_retry_counts_its_slices_once(wide: Services) -> None:
    ids = publish(wide, [b"x"])
    fan_out_stream(wide)
    fan_out_stream(wide)  # the same record handed over again (a batch retried after a later record failed)
    slices = pending_slices(wide)
    assert len(slices) == 6
    done = [run_slice(wide, e)["last"] for e in slices[:3]]
    assert done == [False, False, True]  # the first dispatch's three ids complete the request
    assert unfanned_count(wide) == 0
    for e in slices[3:]:
        run_slice(wide, e)  # the duplicates deliver again (at-least-once) and change nothing else
    for name in PLAIN:
        assert sorted(pulled(wide, name)) == sorted(ids * 2)


def test_a_slice_that_never_succeeds_is_caught_up(wide: Services, clock: FakeClock) -> None:
    ids = publish(wide, [b"y", b"z"])
    fan_out_stream(wide)
    _given_up, *others = pending_slices(wide)  # Lambda gave up on the first slice after its retries
    for e in others:
        run_slice(wide, e)
    assert unfanned_count(wide) == 1
    clock.advance(901)
    assert catch_up_fanout(wide.ctx) == 1
    assert unfanned_count(wide) == 0
    for name in PLAIN:
        assert set(pulled(wide, name)) == set(ids)  # the slices that ran earlier deliver twice, none loses any


def test_ordered_subscriptions_stay_in_the_lane_in_publish_order(wide: Services) -> None:
    wide.admin.create_subscription(sub("ordered"), subscription_request(
        {"topic": topic().path, "enableMessageOrdering": True}, sub("ordered")))
    first = publish(wide, [b"1", b"2"], key="k")
    second = publish(wide, [b"3"], key="k")
    fan_out_stream(wide)
    slices = pending_slices(wide)
    sliced = {s["doc"] for e in slices for s in e[SLICE_EVENT]["subscriptions"]}
    assert not any("ordered" in doc for doc in sliced)
    assert len(slices) == 6  # each record: three slices of the plain subscriptions
    # the lane sent both records to the ordered subscription, one after the other, before any slice ran
    assert pulled(wide, "ordered") == first + second
    for e in reversed(slices):  # slices may run in any order: plain subscriptions promise none
        run_slice(wide, e)
    assert unfanned_count(wide) == 0
    for name in PLAIN:
        assert sorted(pulled(wide, name)) == sorted(first + second)


def test_a_slice_of_a_request_whose_completion_item_expired_marks_nothing(wide: Services) -> None:
    publish(wide, [b"late"])
    fan_out_stream(wide)
    slices = pending_slices(wide)
    item_key = {"pk": {"S": f"fanout#{slices[0][SLICE_EVENT]['entry']['request_id']}"}, "sk": {"S": "slices"}}
    wide.ctx.log._ddb.delete_item(TableName=wide.ctx.config.resources_table, Key=item_key)  # as TTL would
    assert [run_slice(wide, e)["last"] for e in slices] == [False, False, False]
    assert unfanned_count(wide) == 1  # the catch-up decides, as for any request still unfanned
    got = wide.ctx.log._ddb.get_item(TableName=wide.ctx.config.resources_table, Key=item_key)
    assert "Item" not in got  # a finish never creates the item again
