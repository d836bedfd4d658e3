"""Unit tests of core/: names, durations, payload layout, ack ids, publish validation, models."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib.core import ids, names, payload
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.queueing import envelope
from chalicelib.core.queueing.ackids import AckId, AckIdCodec
from chalicelib.core.timefmt import format_timestamp, parse_duration, parse_timestamp
from chalicelib.core.wire.messages import parse_publish
from chalicelib.core.wire.models import Subscription, Topic, mask_paths, parse_model


@pytest.mark.parametrize("rid", ["abc", "a+b~c%d", "A-_.~+%" + "x" * 200, "x" * 255])
def test_valid_names(rid: str) -> None:
    assert names.make("proj", "topics", rid).path == f"projects/proj/topics/{rid}"


@pytest.mark.parametrize("rid", ["ab", "1abc", "goog-x", "Goog", "a/b", "a b", "x" * 256, "", "é-topic"])
def test_invalid_names(rid: str) -> None:
    with pytest.raises(InvalidArgument):
        names.make("proj", "topics", rid)


def test_parse_name() -> None:
    assert names.parse("projects/p1/topics/abc", "topics") == names.Name("p1", "topics", "abc")
    with pytest.raises(InvalidArgument):
        names.parse("projects/p1/subscriptions/abc", "topics")


def test_durations_and_timestamps() -> None:
    assert parse_duration("600s", "d") == 600
    assert parse_duration("1.5s", "d") == 1.5
    with pytest.raises(InvalidArgument):
        parse_duration("10m", "d")
    t = parse_timestamp("2026-11-22T04:59:06.136123456Z", "t")
    assert format_timestamp(t) == "2026-11-22T04:59:06.136Z"
    assert parse_timestamp("2026-11-22T05:59:06+01:00", "t") == parse_timestamp("2026-11-22T04:59:06Z", "t")


@given(st.lists(st.tuples(st.binary(max_size=300), st.dictionaries(st.text(min_size=1, max_size=5),
                                                                    st.text(max_size=5), max_size=3),
                          st.text(max_size=4)), min_size=1, max_size=20))
def test_payload_round_trip(items: list[tuple[bytes, dict[str, str], str]]) -> None:
    msgs = [payload.StoredMessage(ids.message_id("1" * 19, i), d, a, k) for i, (d, a, k) in enumerate(items)]
    blob, start = payload.encode("projects/p/topics/t", "1" * 19, "2026-11-22T04:59:06.000000Z", msgs)
    header, decoded = payload.decode(blob)
    assert decoded == msgs and header.body_start == start
    for e, m in zip(header.entries, msgs):  # each body is addressable by a range read
        assert blob[e.offset : e.offset + e.length] == m.data


def test_raw_key_layout() -> None:
    key = payload.raw_key("projects/p/topics/t.1", "123", "2026-11-22T04:59:06.000000Z")
    assert key == "raw/p/t.1/2026/11/22/04/123.mpub"


def test_ids_sort_by_time() -> None:
    src = ids.IdSource(rand=lambda: 7)
    a, b = src.request_id(1.0), src.request_id(2.0)
    assert a < b and len(a) == 19 and ids.publish_ms(ids.message_id(b, 5)) == 2000


def test_envelope_round_trip() -> None:
    inline = envelope.Envelope("1", "t", {"k": "v"}, "key", data=b"\x00\x01")
    pointer = envelope.Envelope("2", "t", s3_key="raw/x", offset=10, length=5)
    assert envelope.decode(envelope.encode(inline)) == inline
    assert envelope.decode(envelope.encode(pointer)) == pointer


def test_ack_ids_are_tamper_proof() -> None:
    codec = AckIdCodec(b"secret")
    ack = AckId("projects/p/subscriptions/s", "lease", "123", "receipt+/=", 4)
    text = codec.encode(ack)
    assert codec.decode(text, ack.subscription) == ack
    for bad in [text[:-1] + ("A" if text[-1] != "A" else "B"), "garbage", "", 5]:
        with pytest.raises(InvalidArgument):
            codec.decode(bad, ack.subscription)
    with pytest.raises(InvalidArgument):
        AckIdCodec(b"other").decode(text, ack.subscription)
    with pytest.raises(InvalidArgument):
        codec.decode(text, "projects/p/subscriptions/other")


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("body", [
    {"messages": []},
    {"messages": [{}]},
    {"messages": [{"data": "!!"}]},
    {"messages": [{"data": _b64(b"x"), "attributes": {"googkey": "v"}}]},
    {"messages": [{"data": _b64(b"x"), "attributes": {f"k{i}": "v" for i in range(101)}}]},
    {"messages": [{"data": _b64(b"x"), "attributes": {"k" * 257: "v"}}]},
    {"messages": [{"data": _b64(b"x"), "orderingKey": "k" * 1025}]},
    {"messages": [{"data": _b64(b"x")}] * 1001},
    {"messages": [{"data": _b64(b"x"), "bogus": 1}]},
    {"messages": "nope"},
    [1, 2],
])
def test_publish_validation(body: object) -> None:
    with pytest.raises(InvalidArgument):
        parse_publish(body)


def test_publish_accepts_both_base64_alphabets_and_no_padding() -> None:
    msgs = parse_publish({"messages": [{"data": "-_8"}, {"data": "+/8="}, {"attributes": {"a": "b"}}]})
    assert msgs[0].data == msgs[1].data == b"\xfb\xff"


def test_models_accept_both_spellings_and_refuse_unknown_fields() -> None:
    a = parse_model(Subscription, {"topic": "t", "ackDeadlineSeconds": "20"}, "s")
    b = parse_model(Subscription, {"topic": "t", "ack_deadline_seconds": 20}, "s")
    assert a == b and a.ack_deadline == 20
    with pytest.raises(InvalidArgument, match="Unknown name"):
        parse_model(Topic, {"nope": 1}, "topic")
    with pytest.raises(InvalidArgument):
        parse_model(Subscription, {"messageRetentionDuration": "10s"}, "s")
    assert Subscription().ack_deadline == 10


def test_update_masks() -> None:
    allowed = {"labels": "labels", "ack_deadline_seconds": "ack_deadline_seconds"}
    assert mask_paths("labels,ackDeadlineSeconds", allowed, "R") == ["labels", "ack_deadline_seconds"]
    assert mask_paths({"paths": ["labels"]}, allowed, "R") == ["labels"]
    for bad in ["", None, "topic"]:
        with pytest.raises(InvalidArgument):
            mask_paths(bad, allowed, "R")
