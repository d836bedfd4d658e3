"""core/queueing/deadletter.py: the dead-letter threshold, which delivery is the last, how long it stays hidden,
record shards."""

from __future__ import annotations

from chalicelib.core.queueing.deadletter import (
    MAX_VISIBILITY,
    is_last_attempt,
    last_attempt_visibility,
    max_attempts,
    past_max_attempts,
    reports_attempts,
    shard_of,
    tracks_attempts,
)
from chalicelib.core.wire.models import DeadLetterPolicy, RetryPolicy
from tests.unit.test_retry import rec

DLT = "projects/p/topics/d"


def test_max_attempts() -> None:
    assert max_attempts(rec()) == 0
    assert max_attempts(rec(dead_letter_policy=DeadLetterPolicy(dead_letter_topic="projects/p/topics/d"))) == 5
    policy = DeadLetterPolicy(dead_letter_topic="projects/p/topics/d", max_delivery_attempts=7)
    assert max_attempts(rec(dead_letter_policy=policy)) == 7
    assert not past_max_attempts(rec(dead_letter_policy=policy), 7)
    assert past_max_attempts(rec(dead_letter_policy=policy), 8)
    assert not past_max_attempts(rec(), 1000)  # no policy: never


def test_which_subscriptions_track_and_report_attempts() -> None:
    dead = DeadLetterPolicy(dead_letter_topic="projects/p/topics/d")
    assert not tracks_attempts(rec()) and not reports_attempts(rec())
    assert tracks_attempts(rec(retry_policy=RetryPolicy())) and not reports_attempts(rec(retry_policy=RetryPolicy()))
    assert tracks_attempts(rec(dead_letter_policy=dead)) and reports_attempts(rec(dead_letter_policy=dead))


def test_the_last_attempt_is_max_delivery_attempts() -> None:
    policy = rec(dead_letter_policy=DeadLetterPolicy(dead_letter_topic=DLT, max_delivery_attempts=7))
    assert [is_last_attempt(policy, n) for n in (1, 6, 7, 8)] == [False, False, True, True]
    assert not any(is_last_attempt(rec(), n) for n in (1, 5, 100))  # no dead-letter policy: never


def test_a_last_attempt_stays_hidden_for_the_grace_or_its_backoff() -> None:
    plain = rec(dead_letter_policy=DeadLetterPolicy(dead_letter_topic=DLT))
    assert last_attempt_visibility(plain, 10, 5, 150) == 160
    backoff = rec(dead_letter_policy=DeadLetterPolicy(dead_letter_topic=DLT),
                  retry_policy=RetryPolicy(minimum_backoff="600s", maximum_backoff="600s"))
    assert last_attempt_visibility(backoff, 10, 5, 150) == 610  # the longer of the two
    assert last_attempt_visibility(plain, 43_000, 5, 600) == MAX_VISIBILITY


def test_shards_are_stable_and_in_range() -> None:
    shards = {shard_of(f"projects/p/subscriptions/s{i}", 4) for i in range(100)}
    assert shards == {0, 1, 2, 3}
    assert shard_of("projects/p/subscriptions/s", 4) == shard_of("projects/p/subscriptions/s", 4)
