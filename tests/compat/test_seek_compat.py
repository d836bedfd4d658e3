"""Seek and snapshots side by side with Google's emulator (which has both): answers, shapes, replayed sets."""

from __future__ import annotations

from tests.compat.conftest import PROJECT
from tests.compat.test_emulator_compat import P, Pair, b64, new_id, pair, pull_until
from tests.compat.test_emulator_compat import pytestmark as emulator_marks

__all__ = ["pair"]  # the fixture, shared with the single-request cases

pytestmark = emulator_marks
LABELS = {"labels": "the emulator drops a snapshot's labels; Google keeps them"}


def _topic_and_sub(pair: Pair, **sub: object) -> tuple[str, str]:
    topic, name = new_id("seek-topic"), new_id("seek-sub")
    pair.same("PUT", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/subscriptions/{name}", {"topic": f"projects/{PROJECT}/topics/{topic}", **sub})
    return topic, name


def _received(pair: Pair, which: int, sub: str, n: int) -> list[str]:
    got = pull_until(pair, which, sub, n)
    ans = pair.one(which, "POST", f"{P}/subscriptions/{sub}:acknowledge", {"ackIds": [m["ackId"] for m in got]})
    assert ans.status == 200, ans.text
    return sorted(m["message"]["data"] for m in got)


def test_snapshot_lifecycle_and_seek(pair: Pair) -> None:
    topic, sub = _topic_and_sub(pair)
    snap = new_id("snap")
    pair.same("POST", f"{P}/topics/{topic}:publish", {"messages": [{"data": b64(b"acked")}]})
    assert [_received(pair, which, sub, 1) for which in (0, 1)] == [[b64(b"acked")]] * 2
    pair.same("POST", f"{P}/topics/{topic}:publish", {"messages": [{"data": b64(b"unacked")}]})
    emu, met = pair.same("PUT", f"{P}/snapshots/{snap}", {"subscription": f"projects/{PROJECT}/subscriptions/{sub}",
                                                          "labels": {"k": "v"}}, allow=LABELS)
    assert emu["topic"] == met["topic"] == f"projects/{PROJECT}/topics/{topic}"
    pair.same("PUT", f"{P}/snapshots/{snap}", {"subscription": f"projects/{PROJECT}/subscriptions/{sub}"})
    pair.same("GET", f"{P}/snapshots/{snap}", allow=LABELS)
    emu, met = pair.same("GET", f"{P}/topics/{topic}/snapshots")
    assert emu == met == {"snapshots": [f"projects/{PROJECT}/snapshots/{snap}"]}
    pair.same("POST", f"{P}/topics/{topic}:publish", {"messages": [{"data": b64(b"later")}]})
    want = sorted([b64(b"unacked"), b64(b"later")])
    assert [_received(pair, which, sub, 2) for which in (0, 1)] == [want] * 2
    assert pair.same("POST", f"{P}/subscriptions/{sub}:seek", {"snapshot": f"projects/{PROJECT}/snapshots/{snap}"}) \
        == ({}, {})
    assert [_received(pair, which, sub, 2) for which in (0, 1)] == [want] * 2
    pair.same("DELETE", f"{P}/snapshots/{snap}")
    pair.same("GET", f"{P}/snapshots/{snap}")


def test_seek_to_snapshot_of_another_topic(pair: Pair) -> None:
    _, sub = _topic_and_sub(pair)
    _, other = _topic_and_sub(pair)
    snap = new_id("snap")
    pair.same("PUT", f"{P}/snapshots/{snap}", {"subscription": f"projects/{PROJECT}/subscriptions/{sub}"})
    pair.same("POST", f"{P}/subscriptions/{other}:seek", {"snapshot": f"projects/{PROJECT}/snapshots/{snap}"})


def test_seek_back_with_retained_acks(pair: Pair) -> None:
    topic, sub = _topic_and_sub(pair, retainAckedMessages=True)
    pair.same("POST", f"{P}/topics/{topic}:publish", {"messages": [{"data": b64(b"one")}, {"data": b64(b"two")}]})
    assert [_received(pair, which, sub, 2) for which in (0, 1)] == [sorted([b64(b"one"), b64(b"two")])] * 2
    pair.same("POST", f"{P}/subscriptions/{sub}:seek", {"time": "2000-01-01T00:00:00Z"})
    assert [_received(pair, which, sub, 2) for which in (0, 1)] == [sorted([b64(b"one"), b64(b"two")])] * 2
