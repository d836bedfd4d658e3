"""Seek and snapshots on moto: the real services and stores, time injected (FakeClock)."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from chalicelib.api.parsing import acknowledge_request, publish_request, subscription_request
from chalicelib.api.snapshot_requests import create_snapshot_request
from chalicelib.core import names
from chalicelib.core.errors import Aborted, AlreadyExists, FailedPrecondition, NotFound
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.models import Snapshot, Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.runtime import Services
from chalicelib.service.publish import PublishService
from chalicelib.store.push_state import queue_key
from tests.functional.conftest import FakeClock

P = "seek-project"
TOPIC = names.make(P, "topics", "topic-s")
SUB = names.make(P, "subscriptions", "sub-s")


@pytest.fixture
def direct(services: Services) -> Services:
    """Publish fans out itself (as deployed by default), so no stream handler is needed."""
    ctx = services.ctx
    return Services.build(dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, direct_fanout=True)))


def make(svc: Services, clock: FakeClock, topic: dict[str, Any] | None = None, **sub: Any) -> None:
    svc.admin.create_topic(TOPIC, Topic.model_validate(topic or {}))
    svc.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path, **sub}, SUB))
    clock.advance(1)


def publish(svc: Services, *datas: str, key: str = "", attrs: dict[str, str] | None = None) -> list[str]:
    msgs = [{"data": base64.b64encode(d.encode()).decode(), **({"orderingKey": key} if key else {}),
             **({"attributes": attrs} if attrs else {})} for d in datas]
    return list(svc.publish.publish(TOPIC, publish_request({"messages": msgs})).message_ids)


def pull(svc: Services, n: int = 100) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while True:
        batch = svc.pull.pull(SUB, PullRequest(n, True)).to_wire().get("receivedMessages", [])
        got.extend(batch)
        if not batch:
            return got


def drain(svc: Services) -> list[dict[str, Any]]:
    """Pull and acknowledge until nothing comes (an ordered queue hands out a key's next message after an ack)."""
    got: list[dict[str, Any]] = []
    while batch := svc.pull.pull(SUB, PullRequest(10, True)).to_wire().get("receivedMessages", []):
        ack(svc, batch)
        got.extend(batch)
    return got


def ack(svc: Services, got: list[dict[str, Any]]) -> None:
    svc.pull.acknowledge(SUB, acknowledge_request({"ackIds": [m["ackId"] for m in got]}))


def data(got: list[dict[str, Any]]) -> list[str]:
    return [base64.b64decode(m["message"]["data"]).decode() for m in got]


def test_seek_back_with_retained_acks_restores_exactly_the_retained_set(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True, filter='attributes.k != "no"')
    publish(direct, "a", "b")
    clock.advance(10)
    middle = clock.now
    publish(direct, "c")
    publish(direct, "skip", attrs={"k": "no"})
    clock.advance(10)
    first = pull(direct)
    assert data(first) == ["a", "b", "c"]
    ack(direct, first)
    assert pull(direct) == []
    direct.seek.seek_to_time(SUB, middle)
    again = pull(direct)
    assert data(again) == ["c"]
    ack(direct, again)
    direct.seek.seek_to_time(SUB, 0)  # before retention: from the subscription's start
    assert sorted(data(pull(direct))) == ["a", "b", "c"]


def test_ack_id_from_before_a_seek_acknowledges_nothing_after_it(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True)
    publish(direct, "a")
    clock.advance(1)
    old = pull(direct)
    direct.seek.seek_to_time(SUB, 0)
    ack(direct, old)  # ignored: another queue generation
    clock.advance(1)
    assert data(pull(direct)) == ["a"]


def test_seek_without_retained_acks_works_on_the_backlog(direct: Services, clock: FakeClock) -> None:
    make(direct, clock)
    publish(direct, "a", "b")
    clock.advance(10)
    middle = clock.now
    publish(direct, "c", "d")
    clock.advance(1)
    direct.seek.seek_to_time(SUB, middle)  # forward: a and b are dropped
    got = pull(direct)
    assert data(got) == ["c", "d"]
    ack(direct, got[:1])
    clock.advance(60)
    direct.seek.seek_to_time(SUB, 0)  # back: c was acknowledged and stays so; d is leased
    assert pull(direct) == []
    direct.seek.seek_to_time(SUB, clock.now + 60)  # into the future: everything waiting goes
    assert pull(direct) == []


def test_seek_keeps_ordering_keys_in_order(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, enableMessageOrdering=True, retainAckedMessages=True)
    for i in range(5):
        publish(direct, f"k1-{i}", key="k1")
        publish(direct, f"k2-{i}", key="k2")
        clock.advance(0.01)
    clock.advance(1)
    assert len(drain(direct)) == 10
    direct.seek.seek_to_time(SUB, 0)
    got = drain(direct)
    assert len(got) == 10
    for key in ("k1", "k2"):
        assert [d for d in data(got) if d.startswith(key)] == [f"{key}-{i}" for i in range(5)]


def test_exactly_once_delivers_each_replayed_message_once_per_seek(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, enableExactlyOnceDelivery=True, retainAckedMessages=True)
    publish(direct, "a", "b")
    clock.advance(1)
    ack(direct, pull(direct))
    for _ in range(2):
        direct.seek.seek_to_time(SUB, 0)
        got = pull(direct)
        assert sorted(data(got)) == ["a", "b"]
        ack(direct, got)
        assert pull(direct) == []


def test_topic_retention_reaches_before_the_subscription(direct: Services, clock: FakeClock) -> None:
    direct.admin.create_topic(TOPIC, Topic(message_retention_duration="86400s"))
    publish(direct, "early")
    clock.advance(5)
    direct.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path}, SUB))
    clock.advance(1)
    assert pull(direct) == []
    direct.seek.seek_to_time(SUB, 0)
    assert data(pull(direct)) == ["early"]


def test_retention_expiry_with_injected_time(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True, messageRetentionDuration="600s")
    publish(direct, "old")
    clock.advance(700)
    publish(direct, "new")
    clock.advance(1)
    ack(direct, pull(direct))
    direct.seek.seek_to_time(SUB, 0)
    assert data(pull(direct)) == ["new"]  # "old" is past the subscription's retention


def snapshot_name(i: str = "snap-s") -> names.Name:
    return names.make(P, "snapshots", i)


def take_snapshot(svc: Services, name: names.Name) -> Snapshot:
    return svc.snapshots.create(name, create_snapshot_request({"subscription": SUB.path}, name))


def test_snapshot_then_ack_then_seek_restores_unacked_and_later(direct: Services, clock: FakeClock) -> None:
    make(direct, clock)
    publish(direct, "acked-before")
    clock.advance(1)
    ack(direct, pull(direct))
    publish(direct, "unacked")
    clock.advance(1)
    snap = take_snapshot(direct, snapshot_name())
    assert snap.topic == TOPIC.path and snap.expire_time
    clock.advance(1)
    publish(direct, "later")
    clock.advance(1)
    ack(direct, pull(direct))
    assert pull(direct) == []
    direct.seek.seek_to_snapshot(SUB, snapshot_name())
    assert sorted(data(pull(direct))) == ["later", "unacked"]
    with pytest.raises(AlreadyExists):
        take_snapshot(direct, snapshot_name())
    with pytest.raises(NotFound):
        direct.seek.seek_to_snapshot(SUB, snapshot_name("missing"))


def test_snapshot_expires_seven_days_less_the_backlog_age(direct: Services, clock: FakeClock) -> None:
    make(direct, clock)
    publish(direct, "old")
    clock.advance(6 * 86400)
    snap = take_snapshot(direct, snapshot_name())
    assert snap.expire_time is not None
    clock.advance(86400)
    with pytest.raises(NotFound):
        direct.snapshots.get(snapshot_name())
    clock.advance(-1800)  # a backlog 6 days 23.5 hours old: the snapshot would live 30 minutes
    with pytest.raises(FailedPrecondition):
        take_snapshot(direct, snapshot_name("snap-2"))


class _LogWithoutItems:
    """A publish that stored its object and enqueued, but whose log item is not written yet."""

    def __init__(self, log: Any) -> None:
        self._log = log

    def put_object(self, entry: Any, blob: bytes) -> None:
        self._log.put_object(entry, blob)

    def put_entry(self, entry: Any) -> None:
        pass


def test_a_publish_racing_the_swap_is_not_lost(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True)
    publish(direct, "a")
    clock.advance(1)
    ack(direct, pull(direct))
    racing = PublishService(dataclasses.replace(direct.ctx, log=_LogWithoutItems(direct.ctx.log)))  # type: ignore[arg-type]
    racing.append(TOPIC, [NewMessage(b"racing")])
    clock.advance(1)
    direct.seek.seek_to_time(SUB, 0)
    assert sorted(data(pull(direct))) == ["a", "racing"]


def test_a_push_subscription_pushes_from_its_new_generation(direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True, pushConfig={"pushEndpoint": "http://127.0.0.1:9/push"})
    old = direct.admin.get_subscription(SUB).queue_url
    direct.seek.seek_to_time(SUB, 0)
    new = direct.admin.get_subscription(SUB).queue_url
    assert new != old
    # the push index (keyed by the queue name without its generation) still leads the pump to the subscription
    assert direct.ctx.push.index_get(queue_key(new)) == SUB.path


def test_seek_forward_on_an_ordered_subscription_drops_every_older_message_of_a_key(
        direct: Services, clock: FakeClock) -> None:
    make(direct, clock, enableMessageOrdering=True)
    for i in range(4):
        publish(direct, f"old-{i}", key="k")
        clock.advance(0.01)
    clock.advance(1)
    middle = clock.now
    publish(direct, "new-0", key="k")
    publish(direct, "new-1", key="k")
    clock.advance(1)
    direct.seek.seek_to_time(SUB, middle)
    assert data(drain(direct)) == ["new-0", "new-1"]


def test_snapshot_of_an_ordered_subscription_holds_each_key_from_its_oldest_waiting_message(
        direct: Services, clock: FakeClock) -> None:
    make(direct, clock, enableMessageOrdering=True)
    publish(direct, "acked", key="k")
    clock.advance(1)
    assert data(drain(direct)) == ["acked"]
    for i in range(3):
        publish(direct, f"waiting-{i}", key="k")
        clock.advance(0.01)
    take_snapshot(direct, snapshot_name())
    assert data(drain(direct)) == ["waiting-0", "waiting-1", "waiting-2"]
    direct.seek.seek_to_snapshot(SUB, snapshot_name())
    assert data(drain(direct)) == ["waiting-0", "waiting-1", "waiting-2"]


def test_a_patch_read_before_a_seek_cannot_point_the_subscription_back_at_the_old_queue(
        direct: Services, clock: FakeClock) -> None:
    make(direct, clock, retainAckedMessages=True)
    before = direct.admin.get_subscription(SUB)
    direct.seek.seek_to_time(SUB, 0)
    with pytest.raises(Aborted):
        direct.ctx.resources.put_subscription(SUB, before, old_topic=TOPIC.path)
    assert direct.admin.get_subscription(SUB).queue_url != before.queue_url
