"""Packs (core/queueing/packs.py): planning, the envelope and ack id forms, and what a settling request leaves."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.queueing import envelope, sqs_limits
from chalicelib.core.queueing.ackids import AckId, AckIdCodec
from chalicelib.core.queueing.packs import PACK_BYTES, Member, PackState, Step, by_delivery, groups, next_step

pytestmark = pytest.mark.unit


def _env(i: int, size: int = 10, prior: int = 0) -> envelope.Envelope:
    return envelope.Envelope(f"m{i}", "2026-11-26T00:00:00Z", {"k": "v"} if i % 2 else {}, "", b"x" * size,
                             prior=prior)


@given(st.lists(st.integers(1, 70_000), max_size=60), st.integers(1, 120))
def test_groups_keep_order_and_limits(sizes: list[int], max_members: int) -> None:
    plan = groups(sizes, max_members)
    assert [i for g in plan for i in g] == list(range(len(sizes)))
    for g in plan:
        assert len(g) <= max_members
        if len(g) > 1:  # brackets and commas included
            assert sum(sizes[i] for i in g) + len(g) + 1 <= PACK_BYTES


def test_a_pack_round_trips_with_prior_receives() -> None:
    envs = [_env(0), _env(1, prior=3), envelope.Envelope("m2", "t", s3_key="raw/x", offset=5, length=9)]
    body = envelope.encode_pack(envs)
    assert json.loads(body)[1]["r"] == 3
    assert envelope.decode_all(body) == (envs, True)
    assert envelope.decode_all(envelope.encode(envs[1])) == ([envs[1]], False)
    with pytest.raises(ValueError):
        envelope.decode(body)  # a reader of single envelopes never mistakes a pack for one
    with pytest.raises(ValueError):
        envelope.decode_all("[]")


def test_joined_bodies_are_the_pack_encoding() -> None:
    envs = [_env(i) for i in range(4)]
    assert "[" + ",".join(envelope.encode(e) for e in envs) + "]" == envelope.encode_pack(envs)
    assert sqs_limits.body_bytes(envelope.encode_pack(envs)) < PACK_BYTES


def test_ack_ids_carry_the_pack_and_old_ids_still_open() -> None:
    codec = AckIdCodec(b"secret")
    ack = AckId("projects/p/subscriptions/s", "lease", "m1", "receipt", 2, 3, "sqs-id", 4, 9, 7)
    assert codec.decode(codec.encode(ack), ack.subscription) == ack
    single = AckId("projects/p/subscriptions/s", "lease", "m1", "receipt", 2, 3)
    assert codec.decode(codec.encode(single), single.subscription) == single
    mac = codec.encode(ack).split(".")[1]
    with pytest.raises(InvalidArgument):  # a pack index cannot be edited
        codec.decode(codec.encode(AckId(ack.subscription, "lease", "m1", "receipt", 2, 3, "sqs-id", 5, 9, 7))
                     .split(".")[0] + "." + mac, ack.subscription)


def _member(index: int, lease: str = "L", size: int = 5, handed: int = 5) -> Member:
    return Member("receipt-" + lease, "pack", index, size, handed, lease)


def test_a_request_naming_all_a_delivery_handed_out_is_whole() -> None:
    [whole] = by_delivery([_member(i, handed=3) for i in (0, 2, 4)])
    assert whole.whole
    [part] = by_delivery([_member(0, handed=3), _member(0, handed=3)])
    assert not part.whole  # the same id twice is one message
    assert [len(g.members) for g in by_delivery([_member(0), _member(1, "M"), _member(2)])] == [2, 1]


def test_next_step_deletes_redelivers_or_waits() -> None:
    m = _member(0, size=4)
    assert next_step(PackState(frozenset({0, 1, 2})), m) is Step.WAIT
    assert next_step(PackState(frozenset({0, 1, 2, 3})), m) is Step.DELETE
    assert next_step(PackState(frozenset({0, 1}), frozenset({"L:2", "L:3"})), m) is Step.REDELIVER
    # Nacks of another delivery (an earlier receive of the pack) do not settle this one's messages.
    assert next_step(PackState(frozenset({0, 1}), frozenset({"K:2", "K:3"})), m) is Step.WAIT
    # A message nacked and later acknowledged counts once, as done.
    assert next_step(PackState(frozenset({0, 1, 2, 3}), frozenset({"L:2"})), m) is Step.DELETE
    assert PackState(nacked=frozenset({"L:1", "LL:2", "L:10"})).nacked_by("L") == {1, 10}
