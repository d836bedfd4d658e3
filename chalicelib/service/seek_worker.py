"""The background part of a large seek (service/seek.py starts it): one bounded chunk per invocation.

Each invocation takes the seek's lease (a conditional write: two workers never both advance the cursor),
reads the topic's log from the cursor until it has sent ``seek_chunk_messages`` messages, records the new
cursor and releases the lease in one conditional write, and invokes itself again for the next chunk; the chunk
that reaches the end of the log swaps the new queue generation in (conditioned on the seek still being the
subscription's) and marks the seek done. A crash loses at most one chunk's progress: the maintenance schedule
finds the seek idle with no live lease and invokes the worker again, which goes on from the cursor (messages of
the lost chunk may be enqueued twice: delivery is at least once).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from chalicelib.core import names
from chalicelib.core.errors import MetroError, NotFound
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.replay import seek_jobs
from chalicelib.core.replay.seek import Restore
from chalicelib.core.replay.seek_jobs import FAILED, SUPERSEDED, SeekJob
from chalicelib.observability import catalog, metrics
from chalicelib.service.context import Context
from chalicelib.service.seek import SeekService, worker_event

log = logging.getLogger("metro.seek")


class SeekWorker:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.seek = SeekService(ctx)

    def handle(self, event: dict[str, Any]) -> dict[str, Any]:
        """One chunk of the seek named by ``event`` (service/seek.worker_event); what it did, for the logs."""
        job = self.ctx.seek_jobs.get(str(event.get("subscription", "")))
        if job is None or job.seek_id != event.get("seekId") or not job.running:
            return {"state": "gone"}
        now = self.ctx.clock()
        held = self.ctx.seek_jobs.claim(job, now + self.ctx.config.seek_lease_seconds) \
            if seek_jobs.claimable(job, now) else None
        if held is None:
            return {"state": "busy"}
        return {"state": self._chunk(held)}

    def _chunk(self, job: SeekJob) -> str:
        rec = self.ctx.resources.get_subscription(names.parse(job.subscription, "subscriptions"))
        if rec is None or rec.queue_gen not in (job.old_gen, job.new_gen):
            return self._end(job, SUPERSEDED, delete_fill=rec is None or rec.queue_gen != job.new_gen)
        old = SubscriptionRecord(rec.spec, rec.created, job.old_url, job.old_gen)
        new = SubscriptionRecord(rec.spec, rec.created, job.new_url, job.new_gen)
        swapped = rec.queue_gen == job.new_gen
        try:
            restore = self._restore(job)
            if not swapped:
                sent, last, done = self.seek.replay(new, restore, job.read_from_ms(), job.cursor, self.ctx.clock(),
                                                    self.ctx.config.seek_chunk_messages)
                if not done:
                    return self._next(job, seek_jobs.advanced(job, last, sent, self.ctx.clock()))
                # Recorded before the swap (the lease kept): a crash after it does not enqueue this chunk again.
                filled = dataclasses.replace(seek_jobs.advanced(job, last, sent, self.ctx.clock()),
                                             lease_until=job.lease_until)
                if not self.ctx.seek_jobs.save(filled, expected=job):
                    return SUPERSEDED
                job = filled
            self.seek.complete(job, old, new, restore, swapped)
        except MetroError as exc:
            return self._failed(job, exc, swapped)
        return seek_jobs.SUCCEEDED

    def _failed(self, job: SeekJob, exc: MetroError, swapped: bool) -> str:
        """After an error: replaced or ended meanwhile (a refused swap ends the seek), say so; the snapshot's
        backlog gone, end it; otherwise release the lease and fail the invocation (Lambda retries it, and the
        maintenance schedule resumes the seek after that)."""
        current = self.ctx.seek_jobs.get(job.subscription)
        if current is None or current.seek_id != job.seek_id:
            return SUPERSEDED
        if not current.running:
            return current.state
        if isinstance(exc, NotFound):
            log.warning("seek of %s stops: %s", job.subscription, exc)
            return self._end(current, FAILED, delete_fill=not swapped)
        self.ctx.seek_jobs.save(dataclasses.replace(current, lease_until=0.0), expected=current)
        raise exc

    def _restore(self, job: SeekJob) -> Restore:
        if not job.backlog_key:
            return Restore(job.from_ms)
        backlog, keys = self.ctx.snapshots.read_backlog(job.backlog_key)
        return Restore(job.from_ms, backlog, keys)

    def _next(self, held: SeekJob, job: SeekJob) -> str:
        """Record the chunk (only if the lease is still ours) and invoke the worker for the next one."""
        if not self.ctx.seek_jobs.save(job, expected=held):
            return SUPERSEDED
        self.ctx.invoker.invoke(self.ctx.config.seek_function, worker_event(job))
        return seek_jobs.RUNNING

    def _end(self, job: SeekJob, state: seek_jobs.State, delete_fill: bool) -> str:
        self.seek.end(job, state, delete_fill)
        return state

    def resume_stalled(self) -> int:
        """The maintenance schedule's part: invoke the worker for every background seek whose worker died
        (idle longer than a lease), and for a seek that died inside its API call after swapping its generation
        in (the worker finishes it: the messages published meanwhile, the old queue's late ones, retiring the
        old queue); a seek that died inside its API call before the swap failed for its caller and is ended."""
        now, grace = self.ctx.clock(), self.ctx.config.seek_lease_seconds
        resumed = 0
        running = self.ctx.seek_jobs.running()
        stalled = [job for job in running if seek_jobs.stalled(job, now, grace)]
        _report(running, len(stalled), now)
        for job in stalled:
            if not job.background:  # died in its API call: resumed only if it swapped (a seek in place never does)
                rec = self.ctx.resources.get_subscription(names.parse(job.subscription, "subscriptions"))
                if rec is None or rec.queue_gen != job.new_gen or job.new_gen == job.old_gen:
                    self._end(job, FAILED, delete_fill=rec is None or rec.queue_gen != job.new_gen)
                    continue
            self.ctx.invoker.invoke(self.ctx.config.seek_function, worker_event(job))
            resumed += 1
        return resumed


def _report(running: list[SeekJob], stalled: int, now: float) -> None:
    """Each maintenance run's seek signals (docs/operations.md, "stuck seek"): how many run, how many were found
    stalled, and how long ago the least recently advanced one moved."""
    metrics.add(catalog.SEEK_RUNNING, len(running))
    metrics.add(catalog.SEEK_STALLED, stalled)
    metrics.add(catalog.SEEK_PROGRESS_AGE, max((now - max(j.updated, j.started) for j in running), default=0.0),
                metrics.SECONDS)
