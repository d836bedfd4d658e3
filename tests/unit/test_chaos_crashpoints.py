"""Crash points for the fault run (bench/chaos/crashpoints.py), with fake stores: a point fires only after its
write, at its rate, logs one line the harness counts, and is removed again."""

from __future__ import annotations

import io
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from bench.chaos import crashpoints
from chalicelib.core.records import LogEntry
from chalicelib.store.leases import ExactLeases
from chalicelib.store.log import MessageLog
from chalicelib.store.queues import Outgoing, QueueStore, SendResult

pytestmark = pytest.mark.unit


class Exited(Exception):
    pass


class Exits:
    """An injected exit: records the code; raises like the real one would end the call (or returns)."""

    def __init__(self, raises: bool = True) -> None:
        self.codes: list[int] = []
        self.raises = raises

    def __call__(self, code: int) -> None:
        self.codes.append(code)
        if self.raises:
            raise Exited(code)


def entry(inline: bytes | None = None) -> LogEntry:
    return LogEntry("projects/p/topics/t", "rid", "raw/key", 10, 1, 5, "2027-01-15T08:00:00.000000Z", 0,
                    inline=inline)


class FakeS3:
    def __init__(self) -> None:
        self.puts: list[str] = []

    def put_object(self, **kwargs: Any) -> None:
        self.puts.append(kwargs["Key"])


def fake_log() -> Any:
    return SimpleNamespace(_s3=FakeS3(), _bucket="b")


@pytest.fixture(autouse=True)
def removed() -> Iterator[None]:
    originals = {(s.owner, s.method): s.owner.__dict__[s.method] for s in crashpoints.seams()}
    yield
    crashpoints.uninstall()
    assert {(s.owner, s.method): s.owner.__dict__[s.method] for s in crashpoints.seams()} == originals


def test_a_point_crashes_after_its_write_and_logs_a_line() -> None:
    exits, log, log_ = Exits(), io.StringIO(), fake_log()
    points = crashpoints.install(1.0, ["publish.after-body"], exit=exits, log=log)
    with pytest.raises(Exited):
        MessageLog.put_object(log_, entry(), b"blob")
    assert log_._s3.puts == ["raw/key"]  # the write happened first
    assert exits.codes == [137]
    assert log.getvalue() == "crash point: publish.after-body\n"
    assert points.hits == {"publish.after-body": crashpoints.Hits(calls=1, crashes=1)}


def test_a_call_that_writes_nothing_reaches_no_point() -> None:
    exits, log_ = Exits(), fake_log()
    points = crashpoints.install(1.0, exit=exits, log=io.StringIO())
    MessageLog.put_object(log_, entry(inline=b"small"), b"small")  # logged in its item: no S3 object
    fake = SimpleNamespace(_update=lambda *a: {"st": {"S": "acked"}})  # the condition failed: nothing written
    assert ExactLeases.ack(fake, "sub", "key", "token", 1.0) is False
    assert ExactLeases.extend(fake, "sub", "key", "token", 2.0, 1.0) is False
    assert ExactLeases.claim(fake, "sub", "key", "token", 2.0, 1.0, 9) == "acked"
    assert exits.codes == [] and log_._s3.puts == []
    assert all(h == crashpoints.Hits() for h in points.hits.values())


def test_exactly_once_points_follow_a_successful_lease_write() -> None:
    exits = Exits(raises=False)
    points = crashpoints.install(1.0, [p for p in crashpoints.POINTS if p.startswith("exactly-once")], exit=exits,
                                 log=io.StringIO())
    fake = SimpleNamespace(_update=lambda *a: None, _write=lambda *a, **k: (True, {"acked": {"NS": ["1"]}}))
    assert ExactLeases.claim(fake, "sub", "key", "token", 2.0, 1.0, 9) == "ok"  # an exit that returns: goes on
    assert ExactLeases.claim_pack(fake, "sub", "key", "token", 2.0, 1.0, 9) == (True, {1})
    assert ExactLeases.ack(fake, "sub", "key", "token", 1.0) is True
    assert ExactLeases.ack_pack(fake, "sub", "key", "token", {1, 2}, 1.0) == {1}
    assert ExactLeases.extend(fake, "sub", "key", "token", 2.0, 1.0) is True
    assert {p: (h.calls, h.crashes) for p, h in points.hits.items()} == {
        "exactly-once.after-claim": (2, 2), "exactly-once.after-ack": (2, 2), "exactly-once.after-extend": (1, 1)}


def test_send_all_reaches_its_point_only_when_something_was_enqueued() -> None:
    exits = Exits(raises=False)
    points = crashpoints.install(1.0, ["enqueue.after-send"], exit=exits, log=io.StringIO())
    outcome: dict[str, SendResult] = {}
    fake = SimpleNamespace(_workers=SimpleNamespace(map=lambda fn, items: [fn(i) for i in items]),
                           _send_in_turn=lambda url, msgs, batches: outcome[url])
    msgs = [Outgoing("m1"), Outgoing("m2")]
    outcome["q"] = SendResult(failed=[0, 1])
    QueueStore.send_all(fake, [("q", msgs)])
    outcome["q"] = SendResult(failed=[0], dropped=[1])
    QueueStore.send_all(fake, [("q", msgs)])
    assert exits.codes == []
    outcome["q"] = SendResult(failed=[1])
    QueueStore.send_all(fake, [("q", msgs)])
    assert exits.codes == [137] and points.hits["enqueue.after-send"] == crashpoints.Hits(1, 1)


def test_the_rate_and_seed_decide_which_calls_crash() -> None:
    def run(seed: int) -> list[int]:
        exits, log_ = Exits(raises=False), fake_log()
        points = crashpoints.install(0.3, ["publish.after-body"], seed=seed, exit=exits, log=io.StringIO())
        crashed = []
        for i in range(200):
            before = len(exits.codes)
            MessageLog.put_object(log_, entry(), b"blob")
            if len(exits.codes) > before:
                crashed.append(i)
        assert points.hits["publish.after-body"] == crashpoints.Hits(200, len(crashed))
        points.uninstall()
        return crashed

    first = run(7)
    assert first == run(7) != run(8)
    assert 30 < len(first) < 90


def test_rate_zero_never_crashes_and_unknown_points_are_refused() -> None:
    exits = Exits()
    points = crashpoints.install(0.0, exit=exits, log=io.StringIO())
    MessageLog.put_object(fake_log(), entry(), b"blob")
    assert points.hits["publish.after-body"] == crashpoints.Hits(1, 0) and exits.codes == []
    with pytest.raises(RuntimeError):
        crashpoints.install(1.0)
    points.uninstall()
    with pytest.raises(ValueError, match=r"publish\.after-nothing"):
        crashpoints.install(1.0, ["publish.after-nothing"])


def test_every_point_has_a_seam_and_a_description() -> None:
    assert {s.point for s in crashpoints.seams()} == set(crashpoints.POINTS)
    assert all(crashpoints.POINTS.values())


def test_count_crashes_reads_the_lines_out_of_a_log() -> None:
    text = ("2027-01-15 INFO ready\ncrash point: publish.after-body\nTraceback ...\n"
            "crash point: exactly-once.after-ack\nnoise crash point: publish.after-body\n")
    assert crashpoints.count_crashes(text) == {"publish.after-body": 2, "exactly-once.after-ack": 1}
    assert crashpoints.count_crashes("") == {}
