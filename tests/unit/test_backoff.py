"""Push backoff and retry delays, simulated with injected time."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.core.queueing.backoff import MAX_PAUSE, MIN_PAUSE, RAMP, PushThrottle, ThrottleState, retry_delay

T0 = 1_700_000_000.0
ARRIVAL = 0.2  # the subscriber could take 5 messages/s


def simulate(
    throttle: PushThrottle, start: float, duration: float, acked: Callable[[int], bool]
) -> tuple[float, list[float]]:
    """Push a backlog for ``duration`` seconds; return the end time and the intervals between pushes."""
    now, index, intervals = start, 0, []
    while now < start + duration:
        throttle.record(acked(index), now)
        wait = max(ARRIVAL, throttle.delay(now))
        intervals.append(wait)
        now += wait
        index += 1
    return now, intervals


def every_fifth_nacked(index: int) -> bool:
    return index % 5 != 4


def always(result: bool) -> Callable[[int], bool]:
    return lambda index: result


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(1, 10.0), (2, 20.0), (3, 40.0), (6, 320.0), (7, 600.0), (50, 600.0), (5000, 600.0)],
)
def test_retry_delay_doubles_up_to_the_maximum(attempt: int, expected: float) -> None:
    assert retry_delay(attempt, 10.0, 600.0) == expected


def test_retry_delay_edge_cases() -> None:
    assert retry_delay(3, 0.0, 600.0) == 0.0
    assert retry_delay(1, 0.5, 0.25) == 0.25
    with pytest.raises(ValueError):
        retry_delay(0, 10.0, 600.0)


def test_healthy_subscriber_is_not_delayed_and_window_grows() -> None:
    throttle = PushThrottle(cap=20)
    assert throttle.delay(T0) == 0.0
    assert throttle.max_outstanding(T0) == 3
    end, intervals = simulate(throttle, T0, 30.0, always(True))
    assert set(intervals) == {ARRIVAL}
    assert throttle.delay(end) == 0.0
    assert throttle.max_outstanding(end) == 20


def test_one_nack_in_five_gives_a_push_about_every_500_ms() -> None:
    throttle = PushThrottle()
    end, intervals = simulate(throttle, T0, 120.0, every_fifth_nacked)
    steady = intervals[len(intervals) // 2 :]
    assert all(0.3 <= i <= 0.8 for i in steady), (min(steady), max(steady))
    assert 0.4 <= sum(steady) / len(steady) <= 0.6
    assert throttle.max_outstanding(end) == 1


def test_nacking_everything_gives_a_push_every_30_to_60_s() -> None:
    throttle = PushThrottle()
    simulate(throttle, T0, 30.0, always(True))  # healthy history first
    end, intervals = simulate(throttle, T0 + 30.0, 600.0, always(False))
    assert all(MIN_PAUSE <= i <= MAX_PAUSE for i in intervals)
    assert intervals == sorted(intervals)  # the pause only grows while everything fails
    steady = intervals[-5:]
    assert all(30.0 <= i <= 60.0 for i in steady), steady
    assert throttle.max_outstanding(end) == 1


def test_a_single_nack_on_a_fresh_subscription_is_not_a_long_stall() -> None:
    throttle = PushThrottle()
    throttle.record(False, T0)
    assert MIN_PAUSE <= throttle.delay(T0) <= 1.0
    assert throttle.max_outstanding(T0) == 1


def test_the_first_ack_after_a_few_nacks_on_a_fresh_subscription_is_not_a_long_stall() -> None:
    for nacks in (1, 2, 3, 4):
        throttle = PushThrottle()
        for i in range(nacks):
            throttle.record(False, T0 + i * 0.2)
        before = throttle.pause()
        assert before <= RAMP * 2**nacks
        throttle.record(True, T0 + nacks * 0.2)  # no ack history: the share of nacks is still high
        assert throttle.nack_share() >= 0.45
        assert throttle.delay(T0 + nacks * 0.2) <= before, nacks  # the ack does not lengthen the pause
        end, intervals = simulate(throttle, T0 + nacks * 0.2, 30.0, always(True))
        assert max(intervals) <= before and intervals == sorted(intervals, reverse=True)
        assert throttle.delay(end) == 0.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(0.0, 20.0)), min_size=1, max_size=60))
def test_an_ack_never_lengthens_the_pause_and_a_nack_at_most_doubles_it(
    outcomes: list[tuple[bool, float]],
) -> None:
    throttle, now = PushThrottle(), T0
    for acked, gap in outcomes:
        now += gap
        before = throttle.pause()
        throttle.record(acked, now)
        after = throttle.pause()
        assert after == 0.0 or MIN_PAUSE <= after <= MAX_PAUSE
        if acked:
            assert after <= max(before, MIN_PAUSE)
        else:
            assert after <= max(2 * max(RAMP, before), MIN_PAUSE)


def test_recovery_after_nacking_everything() -> None:
    throttle = PushThrottle(cap=10)
    now, _ = simulate(throttle, T0, 600.0, always(False))
    assert throttle.backing_off()
    assert throttle.max_outstanding(now) == 1
    end, intervals = simulate(throttle, now, 30.0, always(True))
    assert intervals[0] <= 1.0  # the first success ends the long pauses
    assert set(intervals[5:]) == {ARRIVAL}
    assert throttle.delay(end) == 0.0
    assert throttle.max_outstanding(end) == 10


def test_recovery_after_partial_nacks() -> None:
    throttle = PushThrottle(cap=10)
    now, _ = simulate(throttle, T0, 120.0, every_fifth_nacked)
    end, intervals = simulate(throttle, now, 120.0, always(True))
    assert intervals == sorted(intervals, reverse=True)  # the pause shrinks monotonically
    assert intervals[-1] == ARRIVAL
    assert throttle.delay(end) == 0.0
    assert throttle.max_outstanding(end) == 10


def test_delay_counts_down_from_the_last_outcome() -> None:
    throttle = PushThrottle()
    for i in range(10):
        throttle.record(False, T0 + i)
    pause = throttle.delay(T0 + 9)
    assert pause > 10.0
    assert throttle.delay(T0 + 14) == pytest.approx(pause - 5.0)
    assert throttle.delay(T0 + 9 + pause + 1) == 0.0
    assert throttle.max_outstanding(T0 + 9 + pause + 1) == 1  # probe with one push
    assert throttle.delay(T0) == pytest.approx(pause)  # a clock running behind never waits longer


def test_rare_or_old_nacks_are_tolerated() -> None:
    throttle = PushThrottle()
    simulate(throttle, T0, 60.0, lambda i: i != 100)  # one nack among 300 pushes
    assert throttle.delay(T0 + 60.0) == 0.0
    throttle = PushThrottle()
    throttle.record(True, T0)
    throttle.record(False, T0 + 1)
    throttle.record(True, T0 + 60)
    assert throttle.delay(T0 + 60) == 0.0


def test_state_round_trips_through_a_dict() -> None:
    throttle = PushThrottle()
    simulate(throttle, T0, 20.0, every_fifth_nacked)
    data = throttle.state.to_dict()
    assert set(data) == {"acks", "nacks", "updated", "streak", "window", "ceiling"}
    assert ThrottleState.from_dict(data) == throttle.state
    as_dynamodb = {k: Decimal(str(v)) for k, v in data.items()}
    restored = PushThrottle(ThrottleState.from_dict(as_dynamodb))
    assert restored.delay(T0 + 20.0) == pytest.approx(throttle.delay(T0 + 20.0))
    assert ThrottleState.from_dict({}) == ThrottleState()
    legacy = {k: v for k, v in data.items() if k != "ceiling"}  # stored before the ceiling existed
    assert ThrottleState.from_dict(legacy).ceiling == MAX_PAUSE


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        PushThrottle(cap=0)
    with pytest.raises(ValueError):
        PushThrottle(half_life=0)
