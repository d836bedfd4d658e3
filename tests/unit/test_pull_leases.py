"""core/queueing/pull_leases.py: which receives of a pull get their lease set again when it answers."""

from __future__ import annotations

from chalicelib.core.queueing import pull_leases


def test_the_slack_is_a_second_at_most_and_a_tenth_of_the_deadline() -> None:
    assert pull_leases.slack(10) == 1.0
    assert pull_leases.slack(600) == 1.0
    assert pull_leases.slack(5) == 0.5


def test_only_receives_older_than_the_slack_are_stale() -> None:
    received = {"a": 100.0, "b": 100.5, "c": 101.0, "d": 101.9}
    assert pull_leases.stale(received, 102.0, 10) == ["a", "b"]  # c is exactly a second old: kept
    assert pull_leases.stale(received, 100.95, 10) == []


def test_a_fast_pull_has_nothing_to_refresh() -> None:
    assert pull_leases.refreshed(pull_leases.stale({"a": 0.0, "b": 0.05}, 0.07, 10), 10, {}) == []


def test_own_visibilities_win_and_each_receipt_is_changed_once() -> None:
    later = {"a": 70, "x": 40}  # a redelivery's longer backoff, a last attempt's grace
    assert pull_leases.refreshed(["a", "b"], 10, later) == [("a", 70), ("x", 40), ("b", 10)]
