"""Packs (several messages in one SQS message) through the real pull, acknowledge and modifyAckDeadline on moto.

A model-based property test: random pulls (of any size, splitting packs), acknowledgements and nacks of any
subset of what is held, and lease expiries, against a model of what the subscriber holds and acknowledged. It
checks that an acknowledged message never comes back, that a held one is not delivered again while held, and
that at the end every message not acknowledged is still delivered, once, and every pack is gone from the queue.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.api.parsing import acknowledge_request, publish_request, subscription_request
from chalicelib.core import names
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import ModifyAckDeadlineRequest, PullRequest
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock

pytestmark = pytest.mark.functional

_names = itertools.count()

Op = tuple[str, Any]
OPS = st.lists(st.one_of(
    st.tuples(st.just("pull"), st.integers(1, 40)),
    st.tuples(st.just("ack"), st.lists(st.integers(0, 500), max_size=15)),
    st.tuples(st.just("nack"), st.lists(st.integers(0, 500), max_size=15)),
    st.tuples(st.just("ack_all"), st.none()),
    st.tuples(st.just("expire"), st.none()),
), max_size=30)


@dataclasses.dataclass
class Model:
    services: Services
    sub: names.Name
    clock: FakeClock
    held: dict[str, str] = dataclasses.field(default_factory=dict)  # message id -> ack id
    acked: set[str] = dataclasses.field(default_factory=set)
    keys: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # ordered: each key's ids in order
    seen: set[str] = dataclasses.field(default_factory=set)

    def pull(self, most: int) -> None:
        got = self.services.pull.pull(self.sub, PullRequest(most, True)).received
        assert len(got) <= most
        for m in got:
            assert m.message_id not in self.acked, "an acknowledged message came back"
            assert m.message_id not in self.held, "a held message was delivered again"
            if m.ordering_key:  # never ahead of its key: every earlier message of the key was delivered before
                earlier = self.keys[m.ordering_key][:self.keys[m.ordering_key].index(m.message_id)]
                assert set(earlier) <= self.seen, "a message was delivered before an earlier one of its key"
            self.seen.add(m.message_id)
            self.held[m.message_id] = m.ack_id

    def _pick(self, picks: list[int]) -> list[str]:
        ids = sorted(self.held)
        return list(dict.fromkeys(ids[i % len(ids)] for i in picks)) if ids else []

    def ack(self, picks: list[int]) -> None:
        chosen = self._pick(picks)
        if chosen:
            self.services.pull.acknowledge(self.sub, acknowledge_request({"ackIds": [self.held[m] for m in chosen]}))
        for m in chosen:
            self.acked.add(m)
            del self.held[m]

    def ack_all(self) -> None:
        self.ack(list(range(len(self.held))))

    def nack(self, picks: list[int]) -> None:
        chosen = self._pick(picks)
        if chosen:
            self.services.pull.modify_ack_deadline(self.sub, ModifyAckDeadlineRequest(
                tuple(self.held[m] for m in chosen), 0))
        for m in chosen:
            del self.held[m]

    def expire(self) -> None:
        """Every lease the subscriber holds runs out: its queue messages are visible again."""
        sqs, url = aws.client("sqs", self.services.ctx.config), self.queue_url()
        receipts = {self.services.ctx.ack_ids.decode(a, self.sub.path).receipt for a in self.held.values()}
        for receipt in receipts:
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=receipt, VisibilityTimeout=0)
        self.held.clear()
        self.clock.advance(11)  # exactly-once leases end with the ack deadline (10 s)

    def queue_url(self) -> str:
        rec = self.services.ctx.resources.get_subscription(self.sub)
        assert rec is not None
        return rec.queue_url


def _setup(services: Services, clock: FakeClock, count: int, exactly_once: bool = False,
           keys: int = 0) -> tuple[Model, list[str]]:
    """A topic and a subscription (ordered when ``keys``: message i has key ``k{i % keys}``), and one publish."""
    n = next(_names)
    topic, sub = names.Name("packs", "topics", f"topic-{n}"), names.Name("packs", "subscriptions", f"sub-{n}")
    services.admin.create_topic(topic, Topic())
    services.admin.create_subscription(sub, subscription_request(
        {"topic": topic.path, "enableExactlyOnceDelivery": exactly_once, "enableMessageOrdering": bool(keys)}, sub))
    clock.advance(1)
    msgs = [{"data": base64.b64encode(f"m{i}".encode()).decode(), **({"orderingKey": f"k{i % keys}"} if keys else {})}
            for i in range(count)]
    ids = list(services.publish.publish(topic, publish_request({"messages": msgs})).message_ids)
    model = Model(services, sub, clock)
    for i, mid in enumerate(ids if keys else []):
        model.keys.setdefault(f"k{i % keys}", []).append(mid)
    return model, ids


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 70), per_pack=st.integers(2, 16), exactly_once=st.booleans(), keys=st.integers(0, 3),
       ops=OPS)
def test_packs_settle_each_message_alone(services: Services, clock: FakeClock, count: int, per_pack: int,
                                         exactly_once: bool, keys: int, ops: list[Op]) -> None:
    """Exactly-once too (every acknowledge of a held message must succeed), and ordered (``keys``: no message is
    delivered before an earlier one of its key)."""
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True, pack_max_messages=per_pack)
    model, ids = _setup(services, clock, count, exactly_once, keys)
    for name, arg in ops:
        getattr(model, name)(*(() if arg is None else (arg,)))
    model.expire()
    final: list[str] = []
    for _ in range(len(ids) + 2):
        got = services.pull.pull(model.sub, PullRequest(1000, True)).received
        if not got:
            break
        final += [m.message_id for m in got]
        services.pull.acknowledge(model.sub, acknowledge_request({"ackIds": [m.ack_id for m in got]}))
    assert len(final) == len(set(final)), "a message was delivered twice in the final drain"
    assert set(final) == set(ids) - model.acked
    attrs = aws.client("sqs", services.ctx.config).get_queue_attributes(
        QueueUrl=model.queue_url(), AttributeNames=["ApproximateNumberOfMessages",
                                                    "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    assert attrs == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}


def test_one_publish_of_small_messages_is_one_queue_message(services: Services, clock: FakeClock) -> None:
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    model, ids = _setup(services, clock, 40)
    attrs = aws.client("sqs", services.ctx.config).get_queue_attributes(
        QueueUrl=model.queue_url(), AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "1"
    model.pull(100)
    assert sorted(model.held) == sorted(ids)


def test_a_nacked_message_comes_back_once_the_rest_of_its_delivery_is_settled(services: Services,
                                                                             clock: FakeClock) -> None:
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    model, ids = _setup(services, clock, 12)
    model.pull(20)
    model.nack([sorted(model.held).index(ids[1])])
    model.pull(20)
    assert sorted(model.held) == sorted(ids[:1] + ids[2:])  # the others are still held: nothing comes yet
    model.ack_all()
    model.pull(20)
    assert list(model.held) == [ids[1]]


def test_exactly_once_never_delivers_a_pack_twice_once_acknowledged(services: Services, clock: FakeClock) -> None:
    """A pack fanned out twice (the stream's fallback after a partly failed publish) is one lease: its copy finds
    every message acknowledged and is removed."""
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    model, ids = _setup(services, clock, 12, exactly_once=True)
    sqs, url = aws.client("sqs", services.ctx.config), model.queue_url()
    [raw] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert raw["Body"].startswith("[")
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=raw["ReceiptHandle"], VisibilityTimeout=0)
    model.pull(5)  # a split: five held, the other seven stay in the pack (its one lease) until those are settled
    model.ack_all()
    model.pull(20)
    assert sorted(model.acked | set(model.held)) == sorted(ids)
    model.ack_all()
    sqs.send_message(QueueUrl=url, MessageBody=raw["Body"])  # the duplicate copy
    clock.advance(11)  # past the first delivery's lease
    model.pull(20)
    assert model.held == {}
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"] == "0"


def test_packs_of_a_request_in_s3_point_into_it(services: Services, clock: FakeClock) -> None:
    """A request stored in S3 reaches the queue as pointers (one range GET per pull reads the bodies); one logged
    in its item carries its bodies (METRO_PACK_POINTERS)."""
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True, pack_pointers=True)
    model, ids = _setup(services, clock, 40)  # 40 small messages: logged in the item, bodies in the pack
    sqs, url = aws.client("sqs", services.ctx.config), model.queue_url()
    [small] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)["Messages"]
    assert '"d":' in small["Body"] and '"s3":' not in small["Body"]
    model.pull(100)
    model.ack_all()
    topic = names.Name("packs", "topics", model.sub.id.replace("sub-", "topic-"))
    big = [{"data": base64.b64encode(bytes([i]) * 1024).decode()} for i in range(40)]  # 40 KiB: an S3 object
    ids = list(services.publish.publish(topic, publish_request({"messages": big})).message_ids)
    [packed] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)["Messages"]
    assert '"s3":' in packed["Body"] and '"d":' not in packed["Body"] and len(packed["Body"]) < 10_000
    got = services.pull.pull(model.sub, PullRequest(100, True)).received
    assert [m.message_id for m in got] == ids
    assert [m.data for m in got] == [bytes([i]) * 1024 for i in range(40)]


def test_exactly_once_splits_keep_a_copy_held_elsewhere_in_its_pack(services: Services, clock: FakeClock) -> None:
    """A copy of a pack (a send retried after a lost answer) received while another delivery holds the pack's lease
    is not delivered, and a split never sends its rest out of the pack: acknowledged messages never come again."""
    services.ctx.config = dataclasses.replace(services.ctx.config, direct_fanout=True)
    model, ids = _setup(services, clock, 12, exactly_once=True)
    sqs, url = aws.client("sqs", services.ctx.config), model.queue_url()
    [raw] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=raw["ReceiptHandle"], VisibilityTimeout=0)
    model.pull(20)  # the first delivery holds the whole pack
    sqs.send_message(QueueUrl=url, MessageBody=raw["Body"])  # the copy
    model.pull(5)  # the copy: its lease is held, nothing of it is delivered or sent back
    model.ack_all()
    assert sorted(model.acked) == sorted(ids)
    clock.advance(11)
    for _ in range(3):  # anything sent back out of the copy would be delivered here
        model.pull(20)
    assert model.held == {}
