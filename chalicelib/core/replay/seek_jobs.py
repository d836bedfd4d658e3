"""A seek that runs in the background (pure): its state and the rules that move it on.

A seek whose fill is larger than the inline limit (config ``seek_inline_max_messages``) fills its new queue
generation in chunks, one per worker invocation. Its state is one record per subscription; a later seek of the
same subscription replaces it (the later seek wins, as in Google), and the replaced seek's worker stops at its
next conditional write. A worker holds a lease while it works on a chunk, so two workers never advance the same
cursor; a lease that runs out (the worker died) lets the next worker, or the maintenance schedule, take over
from the cursor.

States: ``RUNNING`` (the fill goes on), ``SUCCEEDED`` (the new generation is in place), ``SUPERSEDED`` (a later
seek replaced it, or the subscription changed under it) and ``FAILED`` (it cannot go on, e.g. its snapshot's
backlog is gone).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from chalicelib.core import timefmt

State = Literal["RUNNING", "SUCCEEDED", "SUPERSEDED", "FAILED"]
RUNNING: State = "RUNNING"
SUCCEEDED: State = "SUCCEEDED"
SUPERSEDED: State = "SUPERSEDED"
FAILED: State = "FAILED"


@dataclass(frozen=True)
class SeekJob:
    """One seek of ``subscription``: the target (``time`` in epoch ms, or ``snapshot`` with its backlog's S3
    key), the generations it goes from and to, how far the fill has read the topic's log (``cursor``: the last
    publish request id; ``scan_from_ms``: where reading starts) and what it restored."""

    subscription: str
    seek_id: str
    old_gen: int
    old_url: str
    new_gen: int
    new_url: str
    from_ms: int
    scan_from_ms: int
    started: float
    snapshot: str = ""
    backlog_key: str = ""
    cursor: str = ""
    restored: int = 0
    updated: float = 0.0
    finished: float = 0.0
    state: State = RUNNING
    background: bool = False
    lease_until: float = 0.0
    retire_urls: tuple[str, ...] = ()  # queues the seeks it replaced left behind, deleted again when it ends

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    def read_from_ms(self) -> int:
        """Where the next chunk starts reading the log (the cursor's publish time once there is one)."""
        return int(self.cursor[:13]) if self.cursor else self.scan_from_ms


def leftover_queues(replaced: SeekJob | None, gen: int, url: str) -> tuple[str, ...]:
    """The queues a running seek leaves behind when another seek of its subscription (on queue generation
    ``gen`` at ``url`` now) replaces it: the queue it was filling, unless that is in place; if it swapped its
    generation in already, the old queue it had not retired yet; and the queues it was to retire itself."""
    if replaced is None or not replaced.running:
        return ()
    left = list(replaced.retire_urls)
    if replaced.new_url and replaced.new_gen != gen:
        left.append(replaced.new_url)
    elif replaced.new_gen == gen and replaced.old_url and replaced.old_url != url:
        # It died, or is still finishing. Nothing in its old queue is needed: a message published before the new
        # seek's time counts as acknowledged after it, and one published at or after it is in the topic's log,
        # which the new seek fills its generation from.
        left.append(replaced.old_url)
    return tuple(dict.fromkeys(left))


def advanced(job: SeekJob, cursor: str, sent: int, now: float) -> SeekJob:
    """The job after a chunk that read the log up to ``cursor`` and sent ``sent`` messages (lease released)."""
    return dataclasses.replace(job, cursor=cursor, restored=job.restored + sent, updated=now, lease_until=0.0)


def ended(job: SeekJob, state: State, now: float) -> SeekJob:
    return dataclasses.replace(job, state=state, updated=now, finished=now, lease_until=0.0)


def claimable(job: SeekJob, now: float) -> bool:
    """Whether a worker may take the job now: it is running and nobody holds a live lease on it."""
    return job.running and job.lease_until <= now


def stalled(job: SeekJob, now: float, grace: float) -> bool:
    """Whether a running job's worker is presumed dead: no live lease and no progress for ``grace`` seconds
    (a worker re-invokes itself right after each chunk, so a healthy job is never idle that long)."""
    return claimable(job, now) and now - max(job.updated, job.started) >= grace


def status(job: SeekJob | None) -> dict[str, object]:
    """The ``:seekStatus`` answer (a Metro extension): the subscription's latest seek, or ``{}``."""
    if job is None:
        return {}
    out: dict[str, object] = {"state": job.state, "restoredMessages": str(job.restored),
                              "background": job.background, "startTime": timefmt.format_timestamp(job.started)}
    if job.snapshot:
        out["snapshot"] = job.snapshot
    else:
        out["time"] = timefmt.format_timestamp(job.from_ms / 1000)
    if job.finished:
        out["endTime"] = timefmt.format_timestamp(job.finished)
    return {"seek": out}
