"""The slicing of a wide topic's fan-out (core/fanout_slices.py): who stays in the lane, how slices are cut, their
identities and the slice event's round trip."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from chalicelib.core import fanout_slices as fs
from chalicelib.core.records import LogEntry, SubscriptionRecord
from chalicelib.core.wire.models import Subscription

TOPIC = "projects/p/topics/t"


def rec(i: int, ordered: bool = False, gen: int = 0) -> SubscriptionRecord:
    spec = Subscription(name=f"projects/p/subscriptions/s{i}", topic=TOPIC, enable_message_ordering=ordered)
    return SubscriptionRecord(spec, 1_800_000_000.5, f"https://sqs.example/q{i}", gen)


def entry(inline: bytes | None = None) -> LogEntry:
    return LogEntry(TOPIC, "r1", "raw/p/t/x", 40, 3, 12, "2027-01-15T08:00:00.000001Z", 1_800_600_000,
                    inline=inline)


def test_a_topic_up_to_the_slice_size_stays_in_the_lane() -> None:
    subs = [rec(i) for i in range(3)]
    assert fs.split(subs, 3) == fs.Split(subs, [])
    assert fs.split(subs, 0) == fs.Split(subs, [])  # slicing off


def test_wider_topics_are_cut_in_order_and_ordered_subscriptions_stay_in_the_lane() -> None:
    subs = [rec(0), rec(1, ordered=True), rec(2), rec(3), rec(4), rec(5, ordered=True), rec(6)]
    plan = fs.split(subs, 2)
    assert [s.name[-2:] for s in plan.in_lane] == ["s1", "s5"]
    assert [[s.name[-2:] for s in cut.subs] for cut in plan.slices] == [["s0", "s2"], ["s3", "s4"], ["s6"]]
    assert all(cut.records == [fs.record_json(s) for s in cut.subs] for cut in plan.slices)
    assert plan.slices[0].id == fs.slice_id(plan.slices[0].subs)


def test_only_ordered_subscriptions_means_no_slices() -> None:
    subs = [rec(i, ordered=True) for i in range(4)]
    assert fs.split(subs, 2) == fs.Split(subs, [])


def test_slices_are_cut_by_bytes_too() -> None:
    assert fs.chunks([5, 5, 5, 5, 20, 1], max_count=3, max_bytes=12, size=lambda n: n) == [[5, 5], [5, 5], [20], [1]]
    assert fs.chunks([], 3, 10, size=lambda n: n) == []
    one = len(json.dumps(fs.record_json(rec(0)))) + 10
    assert [len(cut.subs) for cut in fs.split([rec(i) for i in range(5)], 4, max_bytes=2 * one).slices] == [2, 2, 1]


def test_split_encodes_through_the_given_encoder() -> None:
    seen: list[str] = []

    def encode(s: SubscriptionRecord) -> tuple[dict[str, Any], int]:
        seen.append(s.name)
        return {"n": s.name}, 1

    plan = fs.split([rec(0), rec(1, ordered=True), rec(2)], 1, encode=encode)
    assert seen == [rec(0).name, rec(2).name]  # the lane's ordered subscription is never encoded
    assert [cut.records for cut in plan.slices] == [[{"n": rec(0).name}], [{"n": rec(2).name}]]


def test_slice_ids_are_stable_and_tell_cuts_apart() -> None:
    a = [rec(0), rec(1)]
    assert fs.slice_id(a) == fs.slice_id([rec(0), rec(1)])
    assert fs.slice_id(a) != fs.slice_id([rec(0)])
    assert fs.slice_id(a) != fs.slice_id([rec(0), rec(1, gen=1)])  # a seek's new queue generation is another slice


def test_the_slice_event_round_trips() -> None:
    subs = [rec(0), rec(1, ordered=True)]
    cut = fs.Cut.of([(s, fs.encoded(s)) for s in subs])
    for e in (entry(), entry(inline=b"\x00raw bytes\xff"), dataclasses.replace(entry(), shard=3)):
        event = fs.slice_event(e, cut)
        assert fs.is_slice_event(event) and not fs.is_slice_event({"Records": []})
        job = fs.parse_slice_event(event)
        assert job == fs.Slice(e, subs, fs.slice_id(subs))


def test_the_template_lets_the_fanout_function_invoke_its_slices() -> None:
    from infra import fanout_slices as template_part
    from infra import policies
    from infra.names import StageNames

    names = StageNames("prod")
    resources: dict[str, Any] = {"Fanout": {"Properties": {}}}
    template_part.add(resources, names, "Fanout", "FanoutFailures")
    assert resources["Fanout"]["Properties"]["Environment"]["Variables"]["METRO_FANOUT_FUNCTION"] == "metro-prod-fanout"
    config = resources[template_part.INVOKE_CONFIG_ID]["Properties"]
    assert config["FunctionName"] == {"Ref": "Fanout"} and config["MaximumRetryAttempts"] == 2
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["FanoutFailures", "Arn"]}
    grants = {st["Sid"]: st for st in policies.statements(names, "fanout")}
    assert grants["FanoutSlicesInvoke"]["Action"] == ["lambda:InvokeFunction"]
    assert grants["FanoutSlicesInvoke"]["Resource"][0]["Fn::Sub"].endswith(":function:metro-prod-fanout")
    assert "dynamodb:UpdateItem" in grants["ResourcesTable"]["Action"]
