"""A slow pull's leases count from its answer (core/queueing/pull_leases.py, docs/decisions/pull-leases.md).

One fake clock drives moto's SQS clock, Metro's clock (exactly-once leases) and the pull's monotonic clock; each
ReceiveMessage of a "slow" pull first lets 1.5 s pass (a deep queue, a slow emulator), so a pull of 40 messages in
four receives answers 6 s after it began and its first receive's lease began 4.5 s before the answer. A subscriber
that acknowledges 9 s after the answer is within its 10 s ack deadline: nothing may be visible again by then.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.api.parsing import acknowledge_request, publish_request, subscription_request
from chalicelib.core import names
from chalicelib.core.errors import MetroError
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.runtime import Services
from tests.functional.conftest import FakeClock

pytestmark = pytest.mark.functional

_names = itertools.count()
RECEIVE_SECONDS = 1.5
KINDS = {"plain": {}, "ordered": {"enableMessageOrdering": True}, "exactly-once": {"enableExactlyOnceDelivery": True}}


@pytest.fixture
def one_clock(services: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    import moto.sqs.models as sqs_models

    monkeypatch.setattr(sqs_models, "unix_time_millis", lambda dt=None: clock.now * 1000.0)
    monkeypatch.setattr(services.pull, "monotonic", clock)
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True, pack_max_messages=1)
    return clock


def _slow_receives(services: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """Receives take RECEIVE_SECONDS while the returned switch's "slow" is on."""
    original: Callable[..., Any] = services.ctx.queues.receive
    switch = {"slow": True}

    def slow(*args: Any, **kwargs: Any) -> Any:
        if switch["slow"]:
            clock.advance(RECEIVE_SECONDS)  # the receive takes this long; its lease starts as it answers
        return original(*args, **kwargs)

    monkeypatch.setattr(services.ctx.queues, "receive", slow)
    return switch


def _changes(services: Services, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, int]]]:
    calls: list[list[tuple[str, int]]] = []
    original: Callable[..., Any] = services.ctx.queues.change_visibility_batch

    def counted(url: str, changes: Any) -> Any:
        calls.append(list(changes))
        return original(url, changes)

    monkeypatch.setattr(services.ctx.queues, "change_visibility_batch", counted)
    return calls


def _setup(services: Services, kind: str, count: int = 40) -> tuple[names.Name, str]:
    n = next(_names)
    topic, sub = names.Name("leases", "topics", f"topic-{n}"), names.Name("leases", "subscriptions", f"sub-{n}")
    services.admin.create_topic(topic, Topic())
    services.admin.create_subscription(sub, subscription_request({"topic": topic.path, **KINDS[kind]}, sub))
    msgs = [{"data": base64.b64encode(f"m{i}".encode()).decode(),
             **({"orderingKey": f"k{i}"} if kind == "ordered" else {})} for i in range(count)]
    services.publish.publish(topic, publish_request({"messages": msgs}))
    rec = services.ctx.resources.get_subscription(sub)
    assert rec is not None
    return sub, rec.queue_url


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_slow_pulls_first_receives_stay_leased_for_the_deadline_from_its_answer(
        services: Services, one_clock: FakeClock, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    sub, url = _setup(services, kind)
    receives = _slow_receives(services, one_clock, monkeypatch)
    changes = _changes(services, monkeypatch)
    began = one_clock.now
    got = services.pull.pull(sub, PullRequest(40, True)).received
    assert len(got) == 40
    assert one_clock.now - began == 4 * RECEIVE_SECONDS  # four receives of ten
    one_clock.advance(9)  # 9 s after the answer: within the 10 s deadline, 13.5 s after the first receive
    receives["slow"] = False
    assert services.ctx.queues.counts(url) == (0, 40), "a lease ended before the deadline counted from the answer"
    # The receives 4.5, 3 and 1.5 s before the answer were leased again (one call, three requests of ten); the
    # last one, as old as the answer, kept its lease.
    assert [len(c) for c in changes] == [30]
    assert {t for _, t in changes[0]} == {10}
    assert services.pull.pull(sub, PullRequest(40, True)).received == ()
    services.pull.acknowledge(sub, acknowledge_request({"ackIds": [m.ack_id for m in got]}))  # every id still good
    one_clock.advance(30)
    assert services.pull.pull(sub, PullRequest(40, True)).received == ()
    assert services.ctx.queues.counts(url) == (0, 0)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_fast_pull_changes_no_visibility(services: Services, one_clock: FakeClock,
                                          monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    sub, url = _setup(services, kind)
    changes = _changes(services, monkeypatch)
    got = services.pull.pull(sub, PullRequest(40, True)).received
    assert len(got) == 40
    assert changes == []  # the common pull costs what it did
    one_clock.advance(9)
    assert services.ctx.queues.counts(url) == (0, 40)
    one_clock.advance(2)  # past the deadline: every lease ended, as Google's would
    assert services.ctx.queues.counts(url) == (40, 0)


def test_each_exactly_once_lease_counts_its_deadline_from_its_own_claim(
        services: Services, one_clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claims that take a while (5 s each here, one after another): the last message's lease is not cut short by
    the time the first claim took."""
    sub, _ = _setup(services, "exactly-once", count=2)
    claim: Callable[..., Any] = services.ctx.exact.claim

    def slow_claim(*args: Any, **kwargs: Any) -> Any:
        answer = claim(*args, **kwargs)
        one_clock.advance(5)
        return answer

    monkeypatch.setattr(services.ctx.exact, "claim", slow_claim)
    monkeypatch.setattr(services.ctx.exact, "each", lambda fn, items: [fn(i) for i in items])  # one after another
    got = services.pull.pull(sub, PullRequest(2, True)).received
    assert len(got) == 2
    one_clock.advance(2)  # 12 s after the first claim, 7 s after the second: within the second's 10 s deadline
    with pytest.raises(MetroError) as refused:
        services.pull.acknowledge(sub, acknowledge_request({"ackIds": [m.ack_id for m in got]}))
    assert got[0].ack_id in str(refused.value.details) and got[1].ack_id not in str(refused.value.details)
