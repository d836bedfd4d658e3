"""core/last_attempt.py: which delivery is the last, how long it stays hidden, record shards, hourly work."""

from __future__ import annotations

from chalicelib.core.last_attempt import (
    MAX_VISIBILITY,
    hourly_work_due,
    is_last_attempt,
    last_attempt_visibility,
    shard_of,
)
from chalicelib.core.models import DeadLetterPolicy, RetryPolicy
from tests.unit.test_policy import rec

DLT = "projects/p/topics/d"


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


def test_hourly_work_runs_in_the_first_minute_of_an_hour() -> None:
    assert hourly_work_due({"time": "2026-11-24T14:00:00Z"})
    assert not hourly_work_due({"time": "2026-11-24T14:01:00Z"})
    assert not hourly_work_due({"time": "2026-11-24T14:59:00Z"})
    assert hourly_work_due(None) and hourly_work_due({})  # a local or manual run does everything
    assert hourly_work_due({"time": "garbage"})
