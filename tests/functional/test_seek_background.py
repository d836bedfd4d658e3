"""A seek larger than the inline limit on moto: the call returns at once, the worker fills in chunks, a crash
resumes from the cursor, the later seek wins; time injected (FakeClock), the worker run by hand."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from chalicelib.core.errors import Aborted, Unavailable
from chalicelib.core.replay.seek import Restore
from chalicelib.core.replay.seek_jobs import RUNNING, SUCCEEDED, SeekJob
from chalicelib.runtime import Services
from chalicelib.service.seek import SeekService
from chalicelib.service.seek_worker import SeekWorker
from chalicelib.store import aws
from tests.functional.conftest import FakeClock
from tests.functional.test_seek import SUB, ack, data, make, publish, pull, snapshot_name, take_snapshot

MESSAGES = [f"m{i}" for i in range(7)]


@pytest.fixture
def small(services: Services) -> Services:
    """Inline limit and chunk of 2 messages; publish fans out itself."""
    ctx = services.ctx
    cfg = dataclasses.replace(ctx.config, direct_fanout=True, seek_inline_max_messages=2, seek_chunk_messages=2)
    return Services.build(dataclasses.replace(ctx, config=cfg))


def published_and_acked(svc: Services, clock: FakeClock) -> None:
    make(svc, clock, retainAckedMessages=True)
    for m in MESSAGES:  # one publish request each: a chunk ends after the request that reaches its size
        publish(svc, m)
        clock.advance(0.01)
    clock.advance(1)
    ack(svc, pull(svc))


def run_worker(svc: Services) -> list[str]:
    """Play the asynchronous invocations until none is left; the states they reported."""
    states: list[str] = []
    worker = SeekWorker(svc.ctx)
    while not svc.ctx.invoker.pending.empty():
        _, event = svc.ctx.invoker.pending.get()
        states.append(str(worker.handle(event)["state"]))
    return states


def status(svc: Services) -> dict[str, object]:
    return cast("dict[str, object]", svc.seek.status(SUB)["seek"])


def test_a_seek_over_the_limit_returns_at_once_and_the_worker_completes_it(small: Services, clock: FakeClock) -> None:
    published_and_acked(small, clock)
    outcome = small.seek.seek_to_time(SUB, 0)
    assert outcome.background and outcome.restored == 2
    assert status(small)["state"] == RUNNING and status(small)["restoredMessages"] == "2"
    assert pull(small) == []  # the old generation serves until the fill is complete
    assert run_worker(small) == [RUNNING, RUNNING, SUCCEEDED]  # 2 + 2 + 2 + the last one with the swap
    assert status(small)["state"] == SUCCEEDED and status(small)["restoredMessages"] == "7"
    assert sorted(data(pull(small))) == MESSAGES
    assert small.ctx.resources.require_subscription(SUB).queue_gen == outcome.generation


def test_ack_ids_of_the_old_generation_stay_dead(small: Services, clock: FakeClock) -> None:
    published_and_acked(small, clock)
    publish(small, "late")
    clock.advance(1)
    held = pull(small)
    assert data(held) == ["late"]
    small.seek.seek_to_time(SUB, 0)
    run_worker(small)
    ack(small, held)  # issued by the old generation: acknowledges nothing
    assert sorted(data(pull(small))) == sorted([*MESSAGES, "late"])


def test_a_crash_mid_fill_resumes_from_the_cursor(small: Services, clock: FakeClock) -> None:
    published_and_acked(small, clock)
    small.seek.seek_to_time(SUB, 0)
    _, event = small.ctx.invoker.pending.get()
    job = small.ctx.seek_jobs.get(SUB.path)
    assert job is not None
    dead = small.ctx.seek_jobs.claim(job, clock.now + small.ctx.config.seek_lease_seconds)  # then it dies
    assert dead is not None
    assert small.ctx.seek_jobs.claim(job, clock.now + 1) is None  # nobody else advances it meanwhile
    assert SeekWorker(small.ctx).handle(event) == {"state": "busy"}
    assert SeekWorker(small.ctx).resume_stalled() == 0  # the lease is still live
    clock.advance(small.ctx.config.seek_lease_seconds + 1)
    assert SeekWorker(small.ctx).resume_stalled() == 1
    assert run_worker(small)[-1] == SUCCEEDED
    assert sorted(data(pull(small))) == MESSAGES  # each once: the dead worker had sent nothing


def queue_urls(svc: Services) -> list[str]:
    return list(aws.sqs(svc.ctx.config).list_queues().get("QueueUrls", []))


def test_the_later_seek_wins(small: Services, clock: FakeClock) -> None:
    published_and_acked(small, clock)
    small.seek.seek_to_time(SUB, 0)
    first = small.ctx.seek_jobs.get(SUB.path)
    assert first is not None
    _, event = small.ctx.invoker.pending.get()
    assert SeekWorker(small.ctx).handle(event) == {"state": RUNNING}  # one chunk, and it invokes itself again
    second = small.seek.seek_to_time(SUB, 0)  # while the first is running
    assert second.background and first.new_url not in queue_urls(small)  # the first's fill is deleted
    states = run_worker(small)
    assert states[0] == "gone" and states[-1] == SUCCEEDED  # the first's worker stops; the second completes
    assert small.ctx.resources.require_subscription(SUB).queue_gen == second.generation
    assert sorted(data(pull(small))) == MESSAGES


def test_an_inline_seek_replaces_a_running_one(small: Services, clock: FakeClock) -> None:
    published_and_acked(small, clock)
    assert small.seek.seek_to_time(SUB, 0).background
    second = small.seek.seek_to_time(SUB, clock.now)  # nothing to restore: inline
    assert not second.background and second.restored == 0
    assert run_worker(small) == ["gone"]
    assert status(small)["state"] == SUCCEEDED
    assert small.ctx.resources.require_subscription(SUB).queue_gen == second.generation
    assert pull(small) == []


def test_a_crash_after_the_swap_is_finished_by_the_resumed_worker(small: Services, clock: FakeClock,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    published_and_acked(small, clock)
    old_url = small.ctx.resources.require_subscription(SUB).queue_url
    outcome = small.seek.seek_to_time(SUB, 0)

    def crash(*_: object) -> int:
        raise RuntimeError("the worker died")

    worker = SeekWorker(small.ctx)
    monkeypatch.setattr(worker.seek, "_rescue", crash)  # dies between the swap and retiring the old queue
    with pytest.raises(RuntimeError):
        while not small.ctx.invoker.pending.empty():
            worker.handle(small.ctx.invoker.pending.get()[1])
    assert small.ctx.resources.require_subscription(SUB).queue_gen == outcome.generation
    assert status(small)["state"] == RUNNING and old_url in queue_urls(small)
    clock.advance(small.ctx.config.seek_lease_seconds + 1)
    assert SeekWorker(small.ctx).resume_stalled() == 1
    assert run_worker(small) == [SUCCEEDED]
    assert old_url not in queue_urls(small)
    assert sorted(data(pull(small))) == MESSAGES


def test_a_seek_call_that_died_is_ended_by_maintenance(small: Services, clock: FakeClock,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    published_and_acked(small, clock)
    before = small.ctx.resources.require_subscription(SUB)

    def die(*_: object) -> tuple[int, str, bool]:
        raise SystemExit("the API function's process ended")  # not an error the call could handle

    monkeypatch.setattr(small.seek, "replay", die)
    with pytest.raises(SystemExit):
        small.seek.seek_to_time(SUB, 0)
    job = small.ctx.seek_jobs.get(SUB.path)
    assert job is not None and job.running and job.new_url in queue_urls(small)
    assert SeekWorker(small.ctx).resume_stalled() == 0  # the call's lease is live: it may still be running
    clock.advance(small.ctx.config.seek_lease_seconds + 1)
    assert SeekWorker(small.ctx).resume_stalled() == 0  # not resumed: its caller got an error
    assert status(small)["state"] == "FAILED" and job.new_url not in queue_urls(small)
    assert small.ctx.resources.require_subscription(SUB).queue_gen == before.queue_gen


def test_a_failed_chunk_releases_its_lease_and_is_retried(small: Services, clock: FakeClock,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    published_and_acked(small, clock)
    small.seek.seek_to_time(SUB, 0)
    worker = SeekWorker(small.ctx)
    send = worker.seek._send
    failures = iter([True])

    def flaky(rec: Any, out: Any) -> int:
        if next(failures, False):
            raise Unavailable("SQS is throttling")
        return send(rec, out)

    monkeypatch.setattr(worker.seek, "_send", flaky)
    _, event = small.ctx.invoker.pending.get()
    with pytest.raises(Unavailable):  # Lambda retries the invocation
        worker.handle(event)
    job = small.ctx.seek_jobs.get(SUB.path)
    assert job is not None and job.running and job.lease_until == 0
    assert worker.handle(event) == {"state": RUNNING}
    assert run_worker(small)[-1] == SUCCEEDED
    assert sorted(data(pull(small))) == MESSAGES


def test_a_seek_to_a_snapshot_continues_in_the_background(small: Services, clock: FakeClock) -> None:
    make(small, clock)
    publish(small, "acked-before")
    clock.advance(1)
    ack(small, pull(small))
    for m in ("unacked-1", "unacked-2"):
        publish(small, m)
    clock.advance(1)
    take_snapshot(small, snapshot_name())
    clock.advance(1)
    later = [f"later-{i}" for i in range(5)]
    for m in later:
        publish(small, m)
    clock.advance(1)
    ack(small, pull(small))
    outcome = small.seek.seek_to_snapshot(SUB, snapshot_name())
    assert outcome.background
    assert run_worker(small)[-1] == SUCCEEDED
    assert status(small)["snapshot"] == snapshot_name().path
    assert sorted(data(pull(small))) == sorted(["unacked-1", "unacked-2", *later])


class _Died(Exception):
    """The seek's process ends right after the swap, before it deletes the old queue."""


@pytest.fixture
def inline(services: Services) -> Services:
    """Publish fans out itself; the default inline limit, so each seek here completes inside its call."""
    ctx = services.ctx
    return Services.build(dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, direct_fanout=True)))


def crash_after_the_swap(svc: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> str:
    """An inline seek that dies once between its swap and retiring the old queue; the old queue's url."""
    published_and_acked(svc, clock)
    old_url = svc.ctx.resources.require_subscription(SUB).queue_url
    retire = SeekService._retire
    calls: list[object] = []

    def dies_once(self: SeekService, *args: Any) -> None:
        calls.append(args)
        if len(calls) == 1:
            raise _Died
        retire(self, *args)

    monkeypatch.setattr(SeekService, "_retire", dies_once)
    with pytest.raises(_Died):
        svc.seek.seek_to_time(SUB, 0)
    job = svc.ctx.seek_jobs.get(SUB.path)
    assert job is not None and job.running and not job.background
    assert svc.ctx.resources.require_subscription(SUB).queue_gen == job.new_gen  # it had swapped
    assert old_url in queue_urls(svc)
    return old_url


def gone(svc: Services, url: str) -> bool:
    sqs = aws.sqs(svc.ctx.config)
    try:
        sqs.get_queue_url(QueueName=url.rsplit("/", 1)[-1])
    except sqs.exceptions.QueueDoesNotExist:
        return url not in queue_urls(svc)
    return False


def test_a_later_seek_retires_the_old_queue_of_a_seek_that_died_after_its_swap(
        inline: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    old_url = crash_after_the_swap(inline, clock, monkeypatch)
    clock.advance(1)
    second = inline.seek.seek_to_time(SUB, 0)
    assert not second.background and second.restored == len(MESSAGES)
    assert gone(inline, old_url)
    assert status(inline)["state"] == SUCCEEDED
    assert sorted(data(pull(inline))) == MESSAGES


def test_maintenance_finishes_a_seek_call_that_died_after_its_swap(
        inline: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    old_url = crash_after_the_swap(inline, clock, monkeypatch)
    assert SeekWorker(inline.ctx).resume_stalled() == 0  # the call's lease is live: it may still be running
    clock.advance(inline.ctx.config.seek_lease_seconds + 1)
    assert SeekWorker(inline.ctx).resume_stalled() == 1  # resumed, not ended: it had swapped
    assert run_worker(inline) == [SUCCEEDED]
    assert gone(inline, old_url)
    assert status(inline)["state"] == SUCCEEDED
    # The call recorded its cursor before the swap: the worker goes on from it, without filling again.
    assert sorted(data(pull(inline))) == MESSAGES


def test_a_leftover_queue_whose_delete_failed_is_retired_by_the_next_seek(
        inline: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A seek replaces one that died after its swap, and the delete of the old queue it leaves fails: the
    queue is named in the replacing seek's record, and the seek after it deletes it."""
    old_url = crash_after_the_swap(inline, clock, monkeypatch)
    queues = inline.ctx.queues
    delete = queues.delete
    failed: list[str] = []

    def fails_for_the_old_queue(url: str) -> None:
        if url == old_url and not failed:
            failed.append(url)
            raise Unavailable("injected: DeleteQueue lost")
        delete(url)

    monkeypatch.setattr(queues, "delete", fails_for_the_old_queue)
    clock.advance(1)
    with pytest.raises(Unavailable):
        inline.seek.seek_to_time(SUB, 0)
    assert failed == [old_url] and not gone(inline, old_url)
    job = inline.ctx.seek_jobs.get(SUB.path)
    assert job is not None and job.running and job.retire_urls == (old_url,)

    clock.advance(1)
    assert inline.seek.seek_to_time(SUB, 0).restored == len(MESSAGES)
    assert gone(inline, old_url)
    assert status(inline)["state"] == SUCCEEDED
    assert sorted(data(pull(inline))) == MESSAGES


def test_a_seek_that_a_running_seek_swaps_under_is_aborted_and_deletes_nothing_live(
        inline: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A running seek swaps its generation in after a later seek read the subscription and before it replaced
    the running one: the later seek must not delete the queue now in place; it ends ABORTED."""
    published_and_acked(inline, clock)
    svc, rec = inline.seek, inline.ctx.resources.require_subscription(SUB)
    running_new = svc._new_generation(rec)
    running = svc._start_job(rec, running_new, Restore(0), clock())
    svc.replay(running_new, Restore(0), 0, "", clock())  # filled, about to swap
    jobs = inline.ctx.seek_jobs
    start = jobs.start

    def swapped_just_before(job: SeekJob) -> SeekJob | None:
        if job.seek_id != running.seek_id:
            inline.ctx.resources.swap_queue(SUB, rec, running_new.queue_url, running_new.queue_gen, jobs.guard(running))
        return start(job)

    monkeypatch.setattr(jobs, "start", swapped_just_before)
    clock.advance(1)
    with pytest.raises(Aborted):
        svc.seek_to_time(SUB, 0)
    live = inline.ctx.resources.require_subscription(SUB)
    assert live.queue_gen == running_new.queue_gen and not gone(inline, running_new.queue_url)
    assert gone(inline, rec.queue_url)  # the old queue the running seek had not retired yet
    assert sorted(data(pull(inline))) == MESSAGES
