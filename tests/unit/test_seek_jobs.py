"""The background seek's state and its transitions (pure, time injected)."""

from __future__ import annotations

from typing import cast

from chalicelib.core.replay import seek_jobs
from chalicelib.core.replay.seek_jobs import FAILED, RUNNING, SUCCEEDED, SeekJob

T0 = 1_800_000_000.0


def job(**changes: object) -> SeekJob:
    base = SeekJob("projects/p/subscriptions/s", "7", 3, "old-url", 7, "new-url", from_ms=1_700_000_000_000,
                   scan_from_ms=1_699_999_000_000, started=T0, updated=T0)
    return SeekJob(**{**base.__dict__, **changes})


def test_reading_starts_at_the_scan_bound_then_at_the_cursor() -> None:
    assert job().read_from_ms() == 1_699_999_000_000
    assert job(cursor="1700000000123456789").read_from_ms() == 1_700_000_000_123


def test_a_chunk_moves_the_cursor_adds_its_messages_and_releases_the_lease() -> None:
    after = seek_jobs.advanced(job(restored=5, lease_until=T0 + 900), "1700000000123456789", 4, T0 + 10)
    assert (after.cursor, after.restored, after.updated, after.lease_until) == ("1700000000123456789", 9, T0 + 10, 0)
    assert after.running


def test_an_ended_seek_is_no_longer_running_nor_claimable() -> None:
    done = seek_jobs.ended(job(lease_until=T0 + 900), SUCCEEDED, T0 + 20)
    assert (done.state, done.finished, done.lease_until) == (SUCCEEDED, T0 + 20, 0)
    assert not done.running and not seek_jobs.claimable(done, T0 + 10_000)


def test_a_live_lease_keeps_other_workers_out_until_it_runs_out() -> None:
    held = job(lease_until=T0 + 900)
    assert not seek_jobs.claimable(held, T0 + 899)
    assert seek_jobs.claimable(held, T0 + 900)


def test_a_seek_is_stalled_only_without_a_lease_and_idle_past_the_grace() -> None:
    assert not seek_jobs.stalled(job(lease_until=T0 + 2000), T0 + 1000, grace=900)
    assert not seek_jobs.stalled(job(updated=T0 + 500), T0 + 1000, grace=900)
    assert seek_jobs.stalled(job(), T0 + 900, grace=900)
    assert not seek_jobs.stalled(job(state=FAILED), T0 + 10_000, grace=900)


def test_status_shows_the_target_progress_and_end() -> None:
    assert seek_jobs.status(None) == {}
    running = seek_jobs.status(job(restored=12, background=True))["seek"]
    assert running == {"state": RUNNING, "restoredMessages": "12", "background": True,
                       "startTime": "2027-01-15T08:00:00.000Z", "time": "2023-11-14T22:13:20.000Z"}
    done = seek_jobs.ended(job(snapshot="projects/p/snapshots/x"), SUCCEEDED, T0 + 1)
    ended = cast("dict[str, object]", seek_jobs.status(done)["seek"])
    assert ended["snapshot"] == "projects/p/snapshots/x" and "time" not in ended
    assert ended["endTime"] == "2027-01-15T08:00:01.000Z"


def test_a_replaced_seek_leaves_its_fill_queue_before_its_swap_and_its_old_queue_after_it() -> None:
    assert seek_jobs.leftover_queues(None, 3, "old-url") == ()
    assert seek_jobs.leftover_queues(job(state=SUCCEEDED), 7, "new-url") == ()
    assert seek_jobs.leftover_queues(job(), 3, "old-url") == ("new-url",)  # not swapped: its fill goes
    assert seek_jobs.leftover_queues(job(), 7, "new-url") == ("old-url",)  # swapped: its old queue goes
    assert seek_jobs.leftover_queues(job(new_gen=3, new_url="old-url"), 3, "old-url") == ()  # a seek in place


def test_a_replaced_seek_hands_on_the_queues_it_was_to_retire() -> None:
    inherited = job(retire_urls=("older-url", "new-url"))
    assert seek_jobs.leftover_queues(inherited, 3, "old-url") == ("older-url", "new-url")
    assert seek_jobs.leftover_queues(inherited, 7, "new-url") == ("older-url", "new-url", "old-url")
