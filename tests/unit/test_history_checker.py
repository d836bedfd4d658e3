"""The fault run's history checker (bench/chaos/checker.py and its rule modules): each rule on a small
hand-made history that breaks it and on its neighbour that does not, the duplicate causes, the drained-only
rules, the report's size cap and a JSON round trip of a whole history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.chaos import history
from bench.chaos.checker import MAX_EXAMPLES, RULES, Report, check
from bench.chaos.checker_index import rfc3339_nanos
from bench.chaos.history import (
    ERROR,
    OK,
    PUSH,
    UNKNOWN,
    Ack,
    Deliver,
    End,
    Message,
    Modack,
    Op,
    Publish,
    Seek,
    Snapshot,
    Subscription,
)

pytestmark = pytest.mark.unit

DRAINED = End(t=100.0, drained=True)
COUNT = "CloudPubSubDeadLetterSourceDeliveryCount"


# --- builders ---------------------------------------------------------------------------------------------


def pub(t: float, *keys: str, outcome: str = OK, ids: tuple[str, ...] | None = None, **message: Any) -> Publish:
    """A publish of ``keys`` answered at ``t``; ids default to ``m-<key>`` when ok."""
    messages = tuple(Message(key=key, **message) for key in keys)
    if ids is None:
        ids = tuple(f"m-{key}" for key in keys) if outcome == OK else ()
    return Publish(t_sent=t - 0.1, t=t, edge="rest", outcome=outcome, messages=messages, ids=ids)


def dlv(t: float, sub: str, key: str, n: int = 1, message_id: str = "", **extra: Any) -> Deliver:
    """The ``n``-th delivery of ``key`` on ``sub``; its ack id is ``<sub>:<key>:<n>``."""
    return Deliver(
        t=t, sub=sub, edge="rest", message_id=message_id or f"m-{key}", key=key, ack_id=aid(sub, key, n), **extra
    )


def aid(sub: str, key: str, n: int = 1) -> str:
    return f"{sub}:{key}:{n}"


def ack(t: float, sub: str, *ack_ids: str, outcome: str = OK, sent: float | None = None, **extra: Any) -> Ack:
    return Ack(
        t_sent=t - 0.1 if sent is None else sent, t=t, sub=sub, edge="rest", ack_ids=ack_ids, outcome=outcome, **extra
    )


def modack(t: float, sub: str, *ack_ids: str, seconds: int = 0, outcome: str = OK, edge: str = "rest") -> Modack:
    return Modack(t_sent=t - 0.1, t=t, sub=sub, edge=edge, ack_ids=ack_ids, seconds=seconds, outcome=outcome)


def seek(t: float, sub: str, outcome: str = OK, **target: str) -> Seek:
    return Seek(t_sent=t - 0.1, t=t, sub=sub, outcome=outcome, **target)


def delivered_and_acked(t: float, sub: str, key: str, n: int = 1, **extra: Any) -> list[Op]:
    return [dlv(t, sub, key, n, **extra), ack(t + 0.5, sub, aid(sub, key, n))]


def found(report: Report, rule: str) -> list[tuple[str, str]]:
    return sorted((v.sub, v.subject) for v in report.violations if v.rule == rule)


def shows(report: Report, rule: str, op: Op) -> bool:
    """Whether some violation of ``rule`` carries ``op`` among its operations."""
    wanted = json.loads(history.to_json(op))
    return any(wanted in v.ops for v in report.violations if v.rule == rule)


def causes(report: Report, sub: str) -> dict[str, int]:
    return {cause: n for cause, n in report.stats[sub].duplicate_causes.items() if n}


def rfc(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


# --- lost, stored-not-delivered, unsettled -------------------------------------------------------------------

PLAIN = Subscription(name="plain")


def test_a_key_acknowledged_on_publish_never_delivered_is_lost() -> None:
    published = pub(1, "a", "b")
    ops: list[Op] = [PLAIN, published, *delivered_and_acked(2, "plain", "a"), DRAINED]
    report = check(ops)
    assert found(report, "lost") == [("plain", "b")]
    assert shows(report, "lost", pub(1, "b"))  # the batch narrowed to the message concerned
    assert check([*ops[:-1], *delivered_and_acked(3, "plain", "b"), DRAINED]).passed


def test_a_key_filtered_out_is_not_lost() -> None:
    red = Subscription(name="red", filter={"color": "red"})
    ops: list[Op] = [red, pub(1, "a", attributes={"color": "blue"}), DRAINED]
    assert check(ops).passed
    assert found(check([red, pub(1, "a", attributes={"color": "red"}), DRAINED]), "lost") == [("red", "a")]


def test_a_stored_key_with_an_unknown_publish_must_reach_every_subscription() -> None:
    other = Subscription(name="other")
    elsewhere = dlv(2, "plain", "x")
    ops: list[Op] = [PLAIN, other, pub(1, "x", outcome=UNKNOWN), elsewhere, ack(3, "plain", aid("plain", "x"))]
    report = check([*ops, DRAINED])
    assert found(report, "stored-not-delivered") == [("other", "x")]
    assert shows(report, "stored-not-delivered", elsewhere)
    assert found(report, "lost") == []
    assert check([*ops, *delivered_and_acked(4, "other", "x"), DRAINED]).passed


def test_a_delivered_key_nothing_settled_is_unsettled() -> None:
    delivery = dlv(2, "plain", "a")
    report = check([PLAIN, pub(1, "a"), delivery, DRAINED])
    assert found(report, "unsettled") == [("plain", "a")]
    assert shows(report, "unsettled", delivery)
    for outcome in (UNKNOWN, ERROR):
        settled = check([PLAIN, pub(1, "a"), delivery, ack(3, "plain", aid("plain", "a"), outcome=outcome), DRAINED])
        assert settled.passed, outcome


# --- dead letters -------------------------------------------------------------------------------------------

SOURCE = Subscription(name="src", max_delivery_attempts=2)
DEAD = Subscription(name="dead", dead_letter_of="src")


def nacked_twice(key: str, t: float = 2) -> list[Op]:
    return [
        dlv(t, "src", key, 1, attempt=1),
        modack(t + 0.5, "src", aid("src", key, 1)),
        dlv(t + 1, "src", key, 2, attempt=2),
        modack(t + 1.5, "src", aid("src", key, 2)),
    ]


def forwarded(t: float, key: str, count: str = "2") -> list[Op]:
    return delivered_and_acked(t, "dead", key, message_id=f"dl-{key}", attributes={COUNT: count})


def test_a_dead_letter_source_must_forward_every_key() -> None:
    ops: list[Op] = [SOURCE, DEAD, pub(1, "a"), *nacked_twice("a")]
    report = check([*ops, DRAINED])
    assert found(report, "lost") == [("dead", "a")]
    assert found(report, "unsettled") == [("src", "a")]
    assert shows(report, "unsettled", ops[3])
    assert check([*ops, *forwarded(10, "a"), DRAINED]).passed


def test_a_dead_letter_delivery_count_must_be_the_max_attempts() -> None:
    ops: list[Op] = [SOURCE, DEAD, pub(1, "a"), *nacked_twice("a")]
    early = forwarded(10, "a", count="1")
    report = check([*ops, *early, DRAINED])
    assert found(report, "dead-letter-count") == [("dead", "a")]
    assert shows(report, "dead-letter-count", early[0])
    late = check([*ops, *forwarded(10, "a", count="3"), DRAINED])
    assert found(late, "dead-letter-late") == [("dead", "a")] and late.passed  # best effort, as Google has it
    # forwarded at its 2nd delivery, then again after the removal from the source was lost: allowed
    again = delivered_and_acked(20, "dead", "a", 2, message_id="dl2-a", attributes={COUNT: "3"})
    assert check([*ops, *forwarded(10, "a"), *again, DRAINED]).passed


def test_a_message_delivered_beyond_its_attempts_is_over_delivered() -> None:
    third = dlv(5, "src", "a", 3, attempt=3)
    report = check([SOURCE, pub(1, "a"), *nacked_twice("a"), third])
    assert set(found(report, "over-delivered")) == {("src", "m-a")}  # three deliveries of one copy, attempt 3
    assert shows(report, "over-delivered", third)
    # two queued copies (a retried fan-out send), each delivered up to the limit: not over-delivered
    copy = [dlv(5, "src", "a", 10, attempt=1), dlv(6, "src", "a", 11, attempt=2)]
    assert check([SOURCE, pub(1, "a"), *nacked_twice("a"), *copy]).passed
    beyond = check([SOURCE, pub(1, "a"), dlv(2, "src", "a", 1, attempt=3)])
    assert found(beyond, "over-delivered") == [("src", "m-a")]
    missing = check([SOURCE, pub(1, "a"), dlv(2, "src", "a", 1, attempt=0)])
    assert found(missing, "over-delivered") == [("src", "m-a")]
    assert check([SOURCE, pub(1, "a"), *nacked_twice("a")]).passed


def test_a_source_delivering_a_dead_lettered_key_is_judged_by_key() -> None:
    late = dlv(12, "src", "a", 3, attempt=2)
    ops: list[Op] = [SOURCE, DEAD, pub(1, "a"), dlv(2, "src", "a", 1, attempt=1), *forwarded(10, "a")]
    report = check([*ops, late])
    assert found(report, "delivered-after-dead-letter") == [("src", "m-a")]
    assert shows(report, "delivered-after-dead-letter", late)
    assert report.passed  # reported, but Google's dead lettering is best effort: it fails no run
    assert check([*ops, dlv(9, "src", "a", 3, attempt=2)]).passed
    twice = [SOURCE, DEAD, pub(1, "a", outcome=UNKNOWN), pub(1.5, "a", ids=("m2-a",)), *ops[3:], late]
    assert found(check(twice), "delivered-after-dead-letter") == []
    # two queued copies of m-a (attempt 1 twice): the first copy's forward does not end the second's attempts
    copies = [*ops[:4], dlv(3, "src", "a", 2, attempt=1), *ops[4:], late]
    assert found(check(copies), "delivered-after-dead-letter") == []
    both = [*copies[:-1], *delivered_and_acked(11, "dead", "a", message_id="dl2-a", attributes={COUNT: "2"}), late]
    assert found(check(both), "delivered-after-dead-letter") == [("src", "m-a")]  # both copies forwarded by then


# --- order, filters -----------------------------------------------------------------------------------------

ORDERED = Subscription(name="ord", ordered=True)


def test_a_key_first_delivered_after_a_later_one_breaks_order() -> None:
    published = [pub(1, "k1", ordering_key="o", seq=1), pub(1.1, "k2", ordering_key="o", seq=2)]
    behind = dlv(3, "ord", "k1")
    report = check([ORDERED, *published, dlv(2, "ord", "k2"), behind])
    assert found(report, "order") == [("ord", "k1")]
    assert shows(report, "order", behind)
    replayed = [dlv(2, "ord", "k1"), modack(2.5, "ord", aid("ord", "k1")), dlv(3, "ord", "k2"), dlv(4, "ord", "k1", 2)]
    assert check([ORDERED, *published, *replayed]).passed


def test_a_delivery_its_filter_excludes_leaks() -> None:
    red = Subscription(name="red", filter={"color": "red"})
    leak = dlv(2, "red", "b")
    report = check([red, pub(1, "a", attributes={"color": "red"}), pub(1, "b", attributes={"color": "blue"}), leak])
    assert found(report, "filter-leak") == [("red", "b")]
    assert shows(report, "filter-leak", leak)
    unpublished = dlv(2, "red", "c", attributes={"color": "red"})
    assert check([red, pub(1, "a", attributes={"color": "red"}), dlv(2, "red", "a"), unpublished]).passed


# --- exactly-once -------------------------------------------------------------------------------------------

EXACT = Subscription(name="ex", exactly_once=True, seeks=True)


def test_a_redelivery_after_a_confirmed_ack_breaks_exactly_once() -> None:
    again = dlv(5, "ex", "a", 2)
    ops: list[Op] = [EXACT, pub(1, "a"), dlv(2, "ex", "a"), ack(3, "ex", aid("ex", "a"))]
    report = check([*ops, again])
    assert found(report, "redelivered-after-ack") == [("ex", "m-a")]
    assert shows(report, "redelivered-after-ack", again)
    assert check([*ops, seek(4, "ex", snapshot="s"), again]).passed
    assert check([*ops, seek(4, "ex", outcome=UNKNOWN, snapshot="s"), again]).passed
    assert found(check([*ops, seek(4, "ex", outcome=ERROR, snapshot="s"), again]), "redelivered-after-ack")


def test_a_seek_replaying_what_it_should_not_breaks_exactly_once() -> None:
    ops: list[Op] = [EXACT, pub(1, "a"), dlv(2, "ex", "a", publish_time=rfc(1)), ack(3, "ex", aid("ex", "a"))]
    again = dlv(5, "ex", "a", 2, publish_time=rfc(1))
    report = check([*ops, seek(4, "ex", time=rfc(5)), again])
    assert found(report, "seek-replayed-outside") == [("ex", "m-a")]
    assert shows(report, "seek-replayed-outside", again)
    assert found(report, "redelivered-after-ack") == []
    assert check([*ops, seek(4, "ex", time=rfc(0)), again]).passed
    plain = Subscription(name="ex", seeks=True)
    assert check([plain, *ops[1:], seek(4, "ex", time=rfc(5)), again]).passed


def test_an_ack_accepted_after_a_newer_delivery_is_stale() -> None:
    stale = ack(5, "ex", aid("ex", "a", 1), sent=4)
    ops: list[Op] = [EXACT, pub(1, "a"), dlv(2, "ex", "a", 1), dlv(3, "ex", "a", 2)]
    report = check([*ops, stale])
    assert found(report, "stale-ack-accepted") == [("ex", aid("ex", "a", 1))]
    assert shows(report, "stale-ack-accepted", stale)
    refused = ack(5, "ex", aid("ex", "a", 1), sent=4, outcome=ERROR)
    assert check([*ops, refused, ack(6, "ex", aid("ex", "a", 2))]).passed


def test_an_ack_accepted_after_a_nack_is_stale() -> None:
    ops: list[Op] = [EXACT, pub(1, "a"), dlv(2, "ex", "a")]
    stale = ack(5, "ex", aid("ex", "a"), sent=4)
    report = check([*ops, modack(3, "ex", aid("ex", "a")), stale])
    assert found(report, "stale-ack-accepted") == [("ex", aid("ex", "a"))]
    assert shows(report, "stale-ack-accepted", stale)
    assert check([*ops, modack(3, "ex", aid("ex", "a"), outcome=UNKNOWN), stale]).passed


def test_an_ack_accepted_after_the_lease_surely_ended_is_stale() -> None:
    ops: list[Op] = [EXACT, pub(1, "a"), dlv(2, "ex", "a")]
    late = ack(14, "ex", aid("ex", "a"), sent=13.5)
    report = check([*ops, late])
    assert found(report, "stale-ack-accepted") == [("ex", aid("ex", "a"))]
    assert shows(report, "stale-ack-accepted", late)
    assert check([*ops, ack(13, "ex", aid("ex", "a"), sent=12.5)]).passed
    assert check([*ops, modack(5, "ex", aid("ex", "a"), seconds=20), late]).passed


# --- seeks --------------------------------------------------------------------------------------------------

SEEKING = Subscription(name="sk", seeks=True)


def test_a_seek_to_a_time_must_replay_what_was_published_after_it() -> None:
    ops: list[Op] = [
        SEEKING,
        pub(1, "old", "new"),
        *delivered_and_acked(2, "sk", "old", publish_time=rfc(1)),
        *delivered_and_acked(2, "sk", "new", publish_time=rfc(3)),
    ]
    to_time = seek(5, "sk", time=rfc(2))
    report = check([*ops, to_time, DRAINED])
    assert found(report, "seek-window-missed") == [("sk", "new")]
    assert shows(report, "seek-window-missed", to_time)
    assert check([*ops, to_time, *delivered_and_acked(6, "sk", "new", 2, publish_time=rfc(3)), DRAINED]).passed
    assert check([*ops, seek(5, "sk", time=rfc(2), outcome=ERROR), DRAINED]).passed


def test_a_seek_to_a_snapshot_must_replay_what_it_had_unacknowledged() -> None:
    snap = Snapshot(t_sent=3, t=3.1, sub="sk", name="s1", outcome=OK)
    to_snap = seek(6, "sk", snapshot="s1")
    unacked_then = [SEEKING, pub(1, "a"), dlv(2, "sk", "a"), snap, ack(4, "sk", aid("sk", "a")), to_snap]
    report = check([*unacked_then, DRAINED])
    assert found(report, "seek-window-missed") == [("sk", "a")]
    assert shows(report, "seek-window-missed", snap)
    assert check([*unacked_then, *delivered_and_acked(7, "sk", "a", 2), DRAINED]).passed
    acked_before = [SEEKING, pub(1, "a"), dlv(2, "sk", "a"), ack(2.5, "sk", aid("sk", "a")), snap, to_snap, DRAINED]
    assert check(acked_before).passed


def test_a_seek_to_a_time_acknowledges_what_was_published_before_it() -> None:
    # "old" reached the plain subscription only: the seek past its publish time acknowledged it on "sk"
    ops: list[Op] = [PLAIN, SEEKING, pub(1, "old", "new"), *delivered_and_acked(2, "plain", "old", publish_time=rfc(1)),
                     *delivered_and_acked(2, "plain", "new", publish_time=rfc(3)), dlv(2.2, "sk", "new",
                     publish_time=rfc(3))]
    report = check([*ops, seek(5, "sk", time=rfc(2)), *delivered_and_acked(6, "sk", "new", 2), DRAINED])
    assert report.passed, report.by_rule()
    assert check([*ops, seek(5, "sk", time=rfc(2), outcome=UNKNOWN), *delivered_and_acked(6, "sk", "new", 2),
                  DRAINED]).passed
    # refused, or to a time before "old": "old" is owed, and "new" (seek to rfc(2)) is owed again after it
    assert found(check([*ops, seek(5, "sk", time=rfc(2), outcome=ERROR), DRAINED]), "lost") == [("sk", "old")]
    report = check([*ops, seek(5, "sk", time=rfc(1)), DRAINED])
    assert found(report, "lost") == [("sk", "old")]
    assert found(report, "seek-window-missed") == [("sk", "new"), ("sk", "old")]


def test_a_delivered_key_a_seek_to_a_later_time_acknowledged_is_settled() -> None:
    ops: list[Op] = [SEEKING, pub(1, "a"), dlv(2, "sk", "a", publish_time=rfc(1))]
    assert found(check([*ops, DRAINED]), "unsettled") == [("sk", "a")]
    assert check([*ops, seek(5, "sk", time=rfc(2)), DRAINED]).passed


def test_a_key_published_after_the_seek_answered_is_owed_whatever_its_publish_time() -> None:
    late = Publish(t_sent=6, t=6.1, edge="rest", outcome=OK, messages=(Message(key="late"),), ids=("m-late",))
    ops: list[Op] = [PLAIN, SEEKING, seek(5, "sk", time=rfc(9)), late,
                     *delivered_and_acked(7, "plain", "late", publish_time=rfc(1))]
    assert found(check([*ops, DRAINED]), "lost") == [("sk", "late")]


def test_a_later_seek_to_a_time_may_acknowledge_what_an_earlier_one_replayed() -> None:
    ops: list[Op] = [SEEKING, pub(1, "a"), *delivered_and_acked(2, "sk", "a", publish_time=rfc(3))]
    replay = seek(5, "sk", time=rfc(2))
    assert found(check([*ops, replay, DRAINED]), "seek-window-missed") == [("sk", "a")]
    assert check([*ops, replay, seek(8, "sk", time=rfc(4)), DRAINED]).passed


# --- drained-only rules, duplicate causes, statistics -------------------------------------------------------


def test_drained_rules_are_not_judged_unless_the_run_drained() -> None:
    ops: list[Op] = [PLAIN, SEEKING, pub(1, "a"), dlv(2, "sk", "a", publish_time=rfc(1)), seek(5, "sk", time=rfc(0))]
    assert {v.rule for v in check([*ops, DRAINED]).violations} == {"lost", "unsettled", "seek-window-missed"}
    for undrained in (ops, [*ops, End(t=50, drained=False)]):
        report = check(undrained)
        assert report.passed
        assert set(report.to_dict()["not_judged"]) == {
            "lost",
            "stored-not-delivered",
            "unsettled",
            "seek-window-missed",
        }
        assert report.stats["plain"].keys_judged == 0
    assert check([*ops, DRAINED]).stats["plain"].keys_judged == 1


@pytest.mark.parametrize(
    ("cause", "between", "second"),
    [
        ("publish-retry", [], dlv(3, "plain", "a", 2, message_id="m2-a")),
        ("seek", [seek(2.5, "plain", time=rfc(0))], dlv(3, "plain", "a", 2)),
        ("nack", [modack(2.5, "plain", aid("plain", "a"), outcome=ERROR)], dlv(3, "plain", "a", 2)),
        ("nack", [modack(2.5, "plain", aid("plain", "a"), seconds=10, edge=PUSH)], dlv(3, "plain", "a", 2)),
        ("ack-lost", [ack(2.5, "plain", aid("plain", "a"), outcome=UNKNOWN)], dlv(3, "plain", "a", 2)),
        ("ack-lost", [ack(2.5, "plain", aid("plain", "a"), refused=(aid("plain", "a"),))], dlv(3, "plain", "a", 2)),
        ("expired", [], dlv(12.5, "plain", "a", 2)),
        ("expired", [ack(13, "plain", aid("plain", "a"), sent=12.5)], dlv(12.5, "plain", "a", 2)),
        ("after-ack", [ack(2.5, "plain", aid("plain", "a"))], dlv(3, "plain", "a", 2)),
        ("copy", [], dlv(3, "plain", "a", 2)),  # the first still held: a second queued copy
        ("copy", [modack(2.5, "plain", aid("plain", "a"), seconds=30)], dlv(20, "plain", "a", 2)),
    ],
)
def test_each_duplicate_gets_its_cause(cause: str, between: list[Op], second: Deliver) -> None:
    report = check([PLAIN, pub(1, "a"), dlv(2, "plain", "a"), *between, second])
    assert causes(report, "plain") == {cause: 1}


def test_statistics_count_deliveries_duplicates_and_acks() -> None:
    ops: list[Op] = [
        PLAIN,
        pub(1, "a", "b"),
        dlv(2, "plain", "a"),
        ack(3, "plain", aid("plain", "a")),
        dlv(2, "plain", "b"),
        ack(3, "plain", aid("plain", "b"), outcome=UNKNOWN),
        dlv(4, "plain", "b", 2),
        ack(5, "plain", aid("plain", "b", 2), outcome=ERROR),
    ]
    stats = check(ops).stats["plain"]
    assert (stats.deliveries, stats.keys_delivered, stats.duplicates) == (3, 2, 1)
    assert stats.duplicates_per_1000_keys == 500.0
    assert (stats.acks_confirmed, stats.acks_in_doubt, stats.acks_refused) == (1, 1, 1)
    assert causes(check(ops), "plain") == {"ack-lost": 1}


# --- the report ---------------------------------------------------------------------------------------------


def test_the_report_keeps_ten_examples_per_rule_and_subscription() -> None:
    keys = [f"k{n}" for n in range(25)]
    report = check([PLAIN, pub(1, *keys), DRAINED])
    summary = json.loads(json.dumps(report.to_dict()))
    assert summary["passed"] is False
    assert summary["violations_by_rule"] == {"lost": 25}
    (group,) = summary["violations"]
    assert (group["rule"], group["sub"], group["count"]) == ("lost", "plain", 25)
    assert len(group["examples"]) == MAX_EXAMPLES
    shown = group["examples"][0]["ops"][0]
    assert (shown["op"], [m["key"] for m in shown["messages"]], shown["ids"]) == ("publish", ["k0"], ["m-k0"])
    assert summary["stats"]["plain"]["keys_judged"] == 25


def test_a_history_judged_after_a_json_round_trip_gets_the_same_report() -> None:
    ops: list[Op] = [
        PLAIN,
        ORDERED,
        EXACT,
        SOURCE,
        DEAD,
        pub(1, "k1", ordering_key="o", seq=1),
        pub(1.1, "k2", ordering_key="o", seq=2, attributes={"x": "y"}),
        dlv(2, "ord", "k2", publish_time=rfc(1)),
        dlv(3, "ord", "k1"),
        dlv(2, "plain", "k1"),
        dlv(2, "ex", "k1"),
        ack(3, "ex", aid("ex", "k1")),
        seek(4, "ex", time=rfc(0)),
        dlv(5, "ex", "k1", 2),
        *nacked_twice("k1"),
        *forwarded(10, "k1", count="1"),
        Snapshot(t_sent=6, t=6.1, sub="ex", name="s", outcome=OK),
        DRAINED,
    ]
    lines = [history.to_json(op) for op in ops]
    again = [history.from_json(line) for line in lines]
    assert again == ops
    report = check(again)
    assert report.to_dict() == check(ops).to_dict()
    assert {"order", "dead-letter-count", "lost", "unsettled"} <= set(report.by_rule())
    assert set(report.by_rule()) <= set(RULES)


def test_publish_times_keep_nanoseconds() -> None:
    earlier = rfc3339_nanos("2026-01-01T00:00:00.123456789Z")
    later = rfc3339_nanos("2026-01-01T00:00:00.12345679Z")
    assert earlier is not None and later is not None and earlier < later
    assert rfc3339_nanos("2026-01-01T01:00:00+01:00") == rfc3339_nanos("2026-01-01T00:00:00Z")
    assert rfc3339_nanos("yesterday") is None


def test_a_shortened_deadline_that_passed_explains_a_redelivery_as_expired() -> None:
    shortened = [dlv(2, "plain", "a", 1), modack(2.5, "plain", aid("plain", "a", 1), seconds=1),
                 dlv(5, "plain", "a", 2)]
    report = check([PLAIN, pub(1, "a"), *shortened])
    assert report.stats["plain"].duplicate_causes["expired"] == 1  # its 10 s deadline was cut to 1 s at 2.5
