"""The fault run's plan, pure: which messages each subscription expects, what its create request holds, and
how late an exactly-once acknowledgement may be accepted under skewed clocks."""

from __future__ import annotations

import threading

import pytest

from bench.chaos import subscriptions as subs
from bench.chaos.__main__ import skew_tolerance

pytestmark = pytest.mark.unit

BY_NAME = {s.name: s for s in subs.FULL}


def test_filters_and_dead_letters_expect_their_share() -> None:
    attrs = [subs.message_attributes(seq) for seq in range(400)]
    assert sum(subs.wants(BY_NAME["filtered"], None, a) for a in attrs) == 100
    assert sum(subs.wants(BY_NAME["doomed"], None, a) for a in attrs) == 20
    graveyard = BY_NAME["graveyard"]
    assert sum(subs.wants(graveyard, BY_NAME[graveyard.dead_letter_of], a) for a in attrs) == 20
    assert all(subs.wants(BY_NAME["plain"], None, a) for a in attrs)


def test_create_requests_carry_the_features() -> None:
    doomed = BY_NAME["doomed"].request("p", "http://push")
    assert doomed["deadLetterPolicy"] == {"deadLetterTopic": "projects/p/topics/graves",
                                          "maxDeliveryAttempts": subs.MAX_DELIVERY_ATTEMPTS}
    assert doomed["filter"] == 'attributes.doom = "1"'
    assert BY_NAME["pushed"].request("p", "http://push/pushed")["pushConfig"] == {
        "pushEndpoint": "http://push/pushed"}
    assert BY_NAME["graveyard"].request("p", "")["topic"] == "projects/p/topics/graves"
    assert BY_NAME["replay"].request("p", "")["retainAckedMessages"] is True


def test_the_history_knows_each_subscriptions_rules() -> None:
    assert BY_NAME["doomed"].spec().max_delivery_attempts == subs.MAX_DELIVERY_ATTEMPTS
    assert BY_NAME["graveyard"].spec().dead_letter_of == "doomed"
    assert BY_NAME["streamed"].spec().exactly_once and BY_NAME["streamed"].spec().edge == "grpc-stream"
    assert BY_NAME["ordered"].spec().ordered and BY_NAME["replay"].spec().seeks


def test_skewed_clocks_widen_the_tolerance_by_twice_the_largest_offset() -> None:
    assert skew_tolerance(("kill",)) == 1.0
    assert skew_tolerance(("skew",)) > 1.0


class _FakeSqs:
    def list_queues(self) -> dict[str, list[str]]:
        return {"QueueUrls": ["http://127.0.0.1:5000/123456789012/metro-a-1", "http://127.0.0.1:5000/123456789012/metro-a-0"]}

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, dict[str, str]]:
        waiting = "3" if QueueUrl.endswith("-1") else "2"
        return {"Attributes": {"ApproximateNumberOfMessages": waiting, "ApproximateNumberOfMessagesNotVisible": "1"}}


class _FakeTable:
    def get_paginator(self, _: str) -> _FakeTable:
        return self

    def paginate(self, **_: object) -> list[dict[str, list[dict[str, dict[str, str]]]]]:
        # the API reached the emulator through its proxy: the record's URL has the proxy's port
        return [{"Items": [{"queue_url": {"S": "http://127.0.0.1:6000/123456789012/metro-a-1"}}, {}]}]


def test_the_backlog_counts_the_subscriptions_queues_whatever_host_their_records_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.chaos import faultrun

    monkeypatch.setattr(faultrun, "_emulator", lambda _stack, service: _FakeSqs() if service == "sqs" else _FakeTable())
    stack = object()
    assert faultrun.backlog(stack) == 4  # type: ignore[arg-type]
    assert faultrun.orphaned_queues(stack) == {"metro-a-0": 3}  # type: ignore[arg-type]


class _VanishingSqs(_FakeSqs):
    """metro-a-0 is deleted between the listing and the reading of its depth (a seek retired it)."""

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, dict[str, str]]:
        from botocore.exceptions import ClientError

        if QueueUrl.endswith("-0"):
            raise ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue"}}, "GetQueueAttributes")
        return super().get_queue_attributes(QueueUrl, AttributeNames)


def test_a_queue_deleted_while_the_backlog_is_read_has_no_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.chaos import faultrun

    monkeypatch.setattr(faultrun, "_emulator",
                        lambda _s, service: _VanishingSqs() if service == "sqs" else _FakeTable())
    stack = object()
    assert faultrun.backlog(stack) == 4  # type: ignore[arg-type]
    assert faultrun.orphaned_queues(stack) == {}  # type: ignore[arg-type]


def test_the_drain_waits_through_a_backlog_it_could_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.chaos import faultrun

    answers: list[int | Exception] = [RuntimeError("emulator busy"), 3, 0]

    def backlog_left() -> int:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    class _Drained:
        lock = threading.Lock()

        class ledger:
            @staticmethod
            def drained() -> bool:
                return True

    monkeypatch.setattr(faultrun.time, "sleep", lambda _s: None)
    faultrun.drain(_Drained(), 60, lambda: None, backlog_left)  # type: ignore[arg-type]
    assert answers == []
