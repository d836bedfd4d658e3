"""Publishes Google accepts that SQS's rules would refuse as they are, fanned out on moto behind an SQS
double that enforces those rules (moto checks only sizes): every message is delivered, nothing stalls.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request
from chalicelib.core import names
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store import aws
from chalicelib.store.queues import QueueStore
from tests.functional.conftest import FakeClock, stream_event
from tests.functional.strict_sqs import StrictSqs, batch_error

P = "limits-project"
TOPIC = names.make(P, "topics", "hostile")
PLAIN, ORDERED = names.make(P, "subscriptions", "plain"), names.make(P, "subscriptions", "ordered")
WIDE = {f"{j:03d}".ljust(250, "k"): "v" * 1024 for j in range(100)}  # 100 attributes, ~128 KB a message
LONG_KEY = "ключ упорядочения с пробелами " * 8  # noqa: RUF001 - 240 characters, 440 bytes, spaces and Cyrillic
ODD = {"odd\uffff": "value \uffff\ufffe end", "plain": "x"}


def build(services: Services, direct: bool) -> tuple[Services, StrictSqs]:
    ctx = services.ctx
    strict = StrictSqs(aws.client("sqs", ctx.config))
    ctx = dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, direct_fanout=direct),
                              queues=QueueStore(ctx.config, ctx.workers, client=strict, sleep=lambda _: None))
    return Services.build(ctx), strict


@pytest.fixture(params=[False, True], ids=["stream", "direct"])
def rig(request: pytest.FixtureRequest, services: Services, clock: FakeClock) -> tuple[Services, StrictSqs]:
    built, strict = build(services, request.param)
    built.admin.create_topic(TOPIC, Topic())
    built.admin.create_subscription(PLAIN, Subscription(topic=TOPIC.path))
    built.admin.create_subscription(ORDERED, Subscription(topic=TOPIC.path, enable_message_ordering=True))
    clock.advance(1)
    return built, strict


def publish(services: Services, count: int, attrs: dict[str, str] | None = None, key: str = "") -> list[str]:
    msg: dict[str, Any] = {"data": base64.b64encode(b"payload").decode()}
    if attrs:
        msg["attributes"] = attrs
    if key:
        msg["orderingKey"] = key
    return list(services.publish.publish(TOPIC, publish_request({"messages": [msg] * count})).message_ids)


def fan_out(services: Services) -> None:
    """Run the stream handler over every record (what the trigger does); none may fail."""
    assert FanOut(services.ctx).handle(stream_event(services)) == {"batchItemFailures": []}


def pull_all(services: Services, sub: names.Name) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while batch := services.pull.pull(sub, PullRequest(100, True)).to_wire().get("receivedMessages", []):
        got += [m["message"] for m in batch]
    return got


@pytest.mark.parametrize("case", ["wide", "long_key", "odd_chars"])
def test_hostile_publishes_reach_every_subscription(rig: tuple[Services, StrictSqs], case: str) -> None:
    services, strict = rig
    attrs, key, count = {"wide": (WIDE, "", 10), "long_key": ({}, LONG_KEY, 3), "odd_chars": (ODD, "k", 2)}[case]
    ids = publish(services, count, attrs, key)
    normal = publish(services, 1, {"after": "yes"})
    fan_out(services)
    for sub in (PLAIN, ORDERED):
        got = pull_all(services, sub)
        assert sorted(m["messageId"] for m in got) == sorted(ids + normal)
        for m in got:
            if m["messageId"] in ids:
                assert m.get("attributes", {}) == attrs and m.get("orderingKey", "") == key
                assert base64.b64decode(m["data"]) == b"payload"
        if key and sub == ORDERED:  # one message group: publish order
            assert [m["messageId"] for m in got if m["messageId"] in ids] == ids
    assert strict.calls and all(batch_error(call) == "" for call in strict.calls)
    assert not [f for f in strict.sent if "MessageGroupId" in f and len(f["MessageGroupId"]) > 128]


def test_a_refused_message_is_counted_and_does_not_stall_the_rest(rig: tuple[Services, StrictSqs],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    services, strict = rig
    strict.poison = {"poisoned"}
    bad = publish(services, 2, {"mark": "poisoned"})
    good = publish(services, 3, {"mark": "fine"})
    fan_out(services)
    for sub in (PLAIN, ORDERED):
        assert sorted(m["messageId"] for m in pull_all(services, sub)) == good
    assert bad and '"FanOutMessagesRefused"' in capsys.readouterr().out
    # Each refused message was offered once per subscription, never again (no retry loop, no stall).
    assert sum("poisoned" in e["MessageBody"] for call in strict.calls for e in call) == 2 * len(bad)


def test_a_refused_pack_loses_only_the_refused_messages(rig: tuple[Services, StrictSqs]) -> None:
    services, strict = rig
    strict.poison = {"poisoned"}
    marks = ["poisoned" if i in (3, 7) else "fine" for i in range(12)]  # more than ten: the plain one packs them
    msgs = [{"data": base64.b64encode(b"payload").decode(), "attributes": {"mark": m}} for m in marks]
    ids = list(services.publish.publish(TOPIC, publish_request({"messages": msgs})).message_ids)
    fan_out(services)
    good = sorted(i for i, m in zip(ids, marks) if m == "fine")
    for sub in (PLAIN, ORDERED):
        assert sorted(m["messageId"] for m in pull_all(services, sub)) == good
    offers = [e["MessageBody"] for call in strict.calls for e in call if "poisoned" in e["MessageBody"]]
    assert sum(body.startswith("[") for body in offers) == 1  # the pack, refused once, then its messages alone
    assert sum(body.startswith("{") for body in offers) == 4


def test_a_passing_failure_is_sent_again_without_duplicates(rig: tuple[Services, StrictSqs]) -> None:
    services, strict = rig
    strict.transient = {'"n":"2"': 2}
    ids = publish(services, 5, {"n": "1"}) + publish(services, 3, {"n": "2"})
    fan_out(services)
    for sub in (PLAIN, ORDERED):
        assert sorted(m["messageId"] for m in pull_all(services, sub)) == sorted(ids)
