"""The checks of `make race` (bench/race_ledger.py) on hand-made timelines: they find a message held twice at
once and an ack lost, and do not blame a pull that was sent first but received after another's nack."""

from __future__ import annotations

from bench.race_ledger import Hold, Ledger

DEADLINE = 10.0


def hold(puller: int, sent: float, answered: float, ack_id: str = "") -> Hold:
    return Hold("m1", ack_id or f"a{puller}-{sent}", puller, sent, answered, sent + DEADLINE)


def ledger_with(*holds: Hold) -> Ledger:
    ledger = Ledger()
    ledger.add_published(["m1"])
    ledger.add_holds(list(holds))
    return ledger


def test_two_pullers_holding_one_message_within_its_deadline_is_an_overlap() -> None:
    first, second = hold(1, 0.0, 0.2), hold(2, 1.0, 1.2)
    ledger = ledger_with(first, second)
    ledger.acked([first], 3.0, 3.1, set())
    ledger.acked([second], 3.0, 3.1, set())
    figures = ledger.figures(exactly_once=True)
    assert figures.overlapping_holds == 1 and figures.acked_more_than_once == 1


def test_a_long_poll_answered_after_anothers_nack_is_no_overlap() -> None:
    long_poll, quick = hold(2, 0.0, 0.83), hold(7, 0.01, 0.57)
    quick.outcome, quick.released = "nacked", 0.57
    ledger = ledger_with(long_poll, quick)
    ledger.acked([long_poll], 0.95, 1.0, set())
    figures = ledger.figures(exactly_once=False)
    assert figures.overlapping_holds == 0 and figures.lost_acks == 0 and figures.missing == 0


def test_a_delivery_after_an_ack_confirmed_within_the_deadline_is_a_lost_ack() -> None:
    first, again = hold(5, 0.0, 0.2), hold(7, 10.1, 10.3)
    ledger = ledger_with(first, again)
    ledger.acked([first], 0.3, 0.4, set())
    ledger.acked([again], 10.4, 10.5, set())
    figures = ledger.figures(exactly_once=False)
    assert figures.lost_acks == 1 and figures.overlapping_holds == 0 and figures.ack_count_mismatches == 0


def test_a_late_ack_does_not_promise_anything_and_a_refused_ack_is_no_ack() -> None:
    late, again = hold(1, 0.0, 0.2), hold(2, 10.5, 10.6)
    ledger = ledger_with(late, again)
    ledger.acked([late], 10.2, 10.4, {late.ack_id})  # past the deadline, and refused (exactly-once)
    assert ledger.pending() == 1
    ledger.acked([again], 11.0, 11.1, set())
    figures = ledger.figures(exactly_once=True)
    assert (figures.lost_acks, figures.acks_refused, figures.missing, figures.acked) == (0, 1, 0, 1)
