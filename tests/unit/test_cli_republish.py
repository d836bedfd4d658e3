"""`metro republish` against a fake Metro: every message reaches every --to topic with its attributes and ordering
key, and is acknowledged only after all its publishes succeeded."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from chalicelib.cli import republish
from chalicelib.cli.client import HttpRequest
from tests.unit.test_cli_commands import FakeMetro, metro

SUB = "/v1/projects/demo/subscriptions/s"


@pytest.fixture
def fake() -> FakeMetro:
    return FakeMetro()


def _received(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"ackId": f"a{i}", "message": {"messageId": str(i), "publishTime": "2026-01-01T00:00:00Z",
                                           "data": base64.b64encode(f"m{i}".encode()).decode(),
                                           "attributes": {"n": str(i)}, "orderingKey": "k"}}
            for i in range(start, start + n)]


def _source(fake: FakeMetro, batches: list[list[dict[str, Any]]]) -> None:
    fake.on("GET", SUB, body={"name": SUB[4:], "topic": "projects/demo/topics/in"})
    queue = list(batches)
    fake.on("POST", f"{SUB}:pull", answer=lambda _r: (200, {"receivedMessages": queue.pop(0) if queue else []}))
    fake.on("POST", f"{SUB}:acknowledge")
    fake.on("POST", f"{SUB}:modifyAckDeadline")


def test_every_message_goes_to_every_topic_then_is_acked(fake: FakeMetro) -> None:
    _source(fake, [_received(2), _received(1, start=2)])
    for topic in ("a", "b"):
        fake.on("POST", f"/v1/projects/demo/topics/{topic}:publish", body={"messageIds": ["x"]})
    done = metro(fake, "republish", "s", "--to", "a", "--to", "projects/demo/topics/b", "--until-empty")
    assert done.exit_code == 0, done.output
    for topic in ("a", "b"):
        sent = [m for body in fake.bodies("POST", f"/topics/{topic}:publish") for m in body["messages"]]
        assert sent == [{"data": base64.b64encode(f"m{i}".encode()).decode(), "attributes": {"n": str(i)},
                         "orderingKey": "k"} for i in range(3)]
    assert fake.bodies("POST", ":acknowledge") == [{"ackIds": ["a0", "a1"]}, {"ackIds": ["a2"]}]
    calls = [r.url.rsplit(":", 1)[-1] for r in fake.requests if r.method == "POST"]
    assert calls == ["pull", "publish", "publish", "acknowledge", "pull", "publish", "publish", "acknowledge", "pull"]
    assert "Republished 3 messages" in done.stderr


def test_a_failed_publish_nacks_acks_nothing_and_exits_1(fake: FakeMetro) -> None:
    _source(fake, [_received(2)])
    fake.on("POST", "/v1/projects/demo/topics/a:publish", body={"messageIds": ["x", "y"]})
    fake.on("POST", "/v1/projects/demo/topics/b:publish", 403, {"error": {
        "code": 403, "message": "User not authorized", "status": "PERMISSION_DENIED"}})
    done = metro(fake, "republish", "s", "--to", "a", "--to", "b", "--until-empty")
    assert done.exit_code == 1
    assert "PERMISSION_DENIED: User not authorized" in done.stderr
    assert fake.bodies("POST", ":acknowledge") == []
    assert fake.bodies("POST", ":modifyAckDeadline") == [{"ackIds": ["a0", "a1"], "ackDeadlineSeconds": 0}]


def test_max_stops_after_that_many_and_pulls_no_more_than_needed(fake: FakeMetro) -> None:
    _source(fake, [_received(2), _received(2, start=2)])
    fake.on("POST", "/v1/projects/demo/topics/a:publish", body={"messageIds": ["x"]})
    done = metro(fake, "republish", "s", "--to", "a", "--max", "3", "--batch", "2")
    assert done.exit_code == 0, done.output
    assert [b["maxMessages"] for b in fake.bodies("POST", ":pull")] == [2, 1]


def test_republishing_into_the_subscription_s_own_topic_is_refused(fake: FakeMetro) -> None:
    _source(fake, [])
    done = metro(fake, "republish", "s", "--to", "in")
    assert done.exit_code == 2
    assert not [r for r in fake.requests if r.method == "POST"]


def test_an_interruption_ends_the_run_cleanly(fake: FakeMetro) -> None:
    _source(fake, [])

    def interrupted(_r: HttpRequest) -> tuple[int, Any]:
        raise KeyboardInterrupt
    fake.on("POST", f"{SUB}:pull", answer=interrupted)
    done = metro(fake, "republish", "s", "--to", "a")
    assert done.exit_code == 0, done.output
    assert "interrupted" in done.stderr


def test_publish_requests_are_cut_within_google_s_limits() -> None:
    small = [{"data": "eA=="}] * 2500
    assert [len(r) for r in republish.requests(small)] == [1000, 1000, 500]
    big = [{"data": "x" * (4 * 1024 * 1024)}] * 3
    assert [len(r) for r in republish.requests(big)] == [2, 1]
