"""Seek: make a subscription's messages unacknowledged again from a time or a snapshot (core/replay/seek.py).

A seek never purges a queue (SQS allows PurgeQueue once a minute, and a purge is not atomic): it fills a
fresh queue generation with the messages the seek restores and then swaps it in, in one conditional write
of the subscription and its topic index item (store/resources.swap_queue), then deletes the old queue.
Ack ids carry their queue generation, so an ack id handed out before the seek can never acknowledge a
message of the new generation (it is ignored), and exactly-once leases are kept per generation, so each
restored message is delivered once per seek.

Where the restored messages come from:

- the topic's log (store/history.py: one Query page, then one GET per raw object on threads, or the
  Parquet archive), when acknowledged messages are retained (``retainAckedMessages``, or a topic
  ``messageRetentionDuration``) and for every snapshot; the log is read again from where the fill stopped
  once the new generation is in place, so messages published meanwhile are in it too, and the old queue's
  messages of requests the log did not show yet (a publish that found the old queue) are moved over;
- otherwise the seek works on the queue in place (no new generation: nothing comes back): its waiting
  messages are received ten at a time and held, those published before the seek time are deleted and the
  others handed back; messages a subscriber holds at that moment stay leased under their ack ids.

Sends are SendMessageBatch calls packed within SQS's limits, concurrent on a standard queue and in order on
a FIFO one, with the subscription's filter applied and small bodies inline as fan-out writes them.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from chalicelib.core import ids, names
from chalicelib.core.errors import Aborted, FailedPrecondition, Unavailable
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.replay import seek_jobs
from chalicelib.core.replay.seek import Restore, earliest_retained, replays_acked
from chalicelib.core.replay.seek_jobs import FAILED, SUCCEEDED, SeekJob
from chalicelib.core.wire.requests import SeekRequest
from chalicelib.core.wire.responses import SeekResponse
from chalicelib.service import exports, push_config
from chalicelib.service.backlog import Held, hold_backlog, release
from chalicelib.service.context import Context
from chalicelib.service.enqueue import matches_filter, queue_message, to_outgoing
from chalicelib.store.queues import Outgoing

log = logging.getLogger("metro.seek")


@dataclass(frozen=True)
class SeekOutcome:
    """What a seek did. ``restored``: the messages it enqueued into a new queue generation, or, working in place,
    the waiting messages it kept (0 when there was nothing to scan); ``generation``: the subscription's queue
    generation afterwards (unchanged by a seek in place); ``background``: the fill goes on in the seek worker
    (``restored`` counts what the call enqueued, ``generation`` is the one swapped in when the fill ends)."""

    restored: int
    generation: int
    background: bool = False


class SeekService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def seek(self, name: Name, request: SeekRequest) -> SeekResponse:
        """``:seek`` as the API calls it: to a time or to a snapshot."""
        if request.snapshot is not None:
            self.seek_to_snapshot(name, request.snapshot)
        else:
            assert request.time is not None
            self.seek_to_time(name, request.time)
        return SeekResponse()

    def seek_to_time(self, subscription: Name, when: float) -> SeekOutcome:
        """Seek ``subscription`` to ``when`` (epoch seconds, UTC).

        Afterwards every retained message of the subscription's topic published at or after ``when`` that
        matches its filter is unacknowledged (delivered again), and every message published before it counts
        as acknowledged. Acknowledged messages come back only when the subscription retains them
        (``retainAckedMessages``) or its topic has a ``messageRetentionDuration``; otherwise the seek works on
        the unacknowledged backlog: seeking forward drops its older part, seeking back restores nothing that
        was acknowledged. A time before the retention window means the start of the window; a time in the
        future drops the whole backlog. Ack ids handed out before the seek no longer acknowledge anything.

        Raises NotFound (no such subscription), FailedPrecondition (detached, or its topic deleted) and
        Aborted (another seek of the same subscription won the race).
        """
        rec = self._seekable(subscription)
        topic = self.ctx.resources.get_topic(names.parse(rec.spec.topic, "topics"))
        now = self.ctx.clock()
        from_ms = int(when * 1000)
        if topic is not None and replays_acked(rec.spec, topic.spec):
            floor_ms = int(earliest_retained(rec.spec, topic.spec, rec.created, now) * 1000)
            return self._from_log(subscription, rec, Restore(max(from_ms, floor_ms)), now)
        job = self._start_job(rec, rec, Restore(from_ms), now)
        outcome = self._trim(rec, from_ms)
        self.retire_leftovers(job)
        self.ctx.seek_jobs.save(seek_jobs.ended(dataclasses.replace(job, restored=outcome.restored), SUCCEEDED,
                                                self.ctx.clock()))
        return outcome

    def seek_to_snapshot(self, subscription: Name, snapshot: Name) -> SeekOutcome:
        """Seek ``subscription`` to ``snapshot``: its unacknowledged messages when the snapshot was taken and every
        message published since (the filter applies) are unacknowledged afterwards, nothing else.

        Raises NotFound (no such subscription or snapshot) and FailedPrecondition (the snapshot's topic is not
        the subscription's).
        """
        rec = self._seekable(subscription)
        now = self.ctx.clock()
        snap = self.ctx.snapshots.get(snapshot, now)
        if snap.spec.topic != rec.spec.topic:
            raise FailedPrecondition(f"The snapshot {snapshot.path} is of topic {snap.spec.topic}, not of the "
                                     f"subscription's topic {rec.spec.topic}.")
        backlog, keys = self.ctx.snapshots.backlog(snap)
        restore = Restore(snap.taken_ms, backlog, keys)
        return self._from_log(subscription, rec, restore, now, snapshot.path, snap.backlog_key)

    def status(self, subscription: Name) -> dict[str, object]:
        """``:seekStatus`` (a Metro extension): the subscription's latest seek and its progress, or ``{}``."""
        self.ctx.resources.require_subscription(subscription)
        return seek_jobs.status(self.ctx.seek_jobs.get(subscription.path))

    # -- helpers ---------------------------------------------------------------------------------
    def _seekable(self, name: Name) -> SubscriptionRecord:
        rec = self.ctx.resources.require_subscription(name)
        if not rec.attached:
            raise FailedPrecondition(f"Subscription {name.path} is detached or its topic was deleted.")
        return rec

    def _new_generation(self, rec: SubscriptionRecord) -> SubscriptionRecord:
        gen = self.ctx.ids.generation()
        url = self.ctx.queues.create(rec.name, gen, rec.spec.enable_message_ordering, rec.spec.ack_deadline,
                                     rec.spec.retention_seconds)
        return SubscriptionRecord(rec.spec, rec.created, url, gen)

    def _start_job(self, old: SubscriptionRecord, new: SubscriptionRecord, restore: Restore, now: float,
                   snapshot: str = "", backlog_key: str = "") -> SeekJob:
        """Record this seek as the subscription's (holding its lease while the call runs); a seek it replaces
        stops at its next write. The queues the replaced seek leaves behind (``leftover_queues``) are then
        named in this seek's record, and deleted: a delete that fails here is done again when this seek ends,
        or by the seek that replaces it in turn."""
        job = SeekJob(old.name, str(new.queue_gen), old.queue_gen, old.queue_url, new.queue_gen, new.queue_url,
                      restore.from_ms, restore.scan_from_ms, now, snapshot, backlog_key, updated=now,
                      lease_until=now + self.ctx.config.seek_lease_seconds)
        replaced = self.ctx.seek_jobs.start(job)
        if replaced is None or not replaced.running:
            return job
        # From here on the replaced seek can no longer swap: what it leaves behind is judged on the subscription
        # as it is now.
        live = self.ctx.resources.get_subscription(names.parse(old.name, "subscriptions"))
        leftovers = seek_jobs.leftover_queues(replaced, live.queue_gen, live.queue_url) if live else ()
        if leftovers:
            job = dataclasses.replace(job, retire_urls=leftovers)
            self.ctx.seek_jobs.save(job)
            log.info("seek of %s retires %d queue(s) left by the seek %s", old.name, len(leftovers),
                     replaced.seek_id)
            self.retire_leftovers(job)
        if live is None or live.queue_gen != old.queue_gen:  # the replaced seek swapped after this one began
            self.end(job, FAILED)
            raise Aborted("The subscription changed during the seek; try again.")
        return job

    def retire_leftovers(self, job: SeekJob) -> None:
        """Delete the queues that the seeks ``job`` replaced left behind (a queue already gone is fine)."""
        for url in job.retire_urls:
            self.ctx.queues.delete(url)

    def end(self, job: SeekJob, state: seek_jobs.State, delete_fill: bool = True) -> None:
        """End ``job`` unfinished: delete the queue it was filling (unless it is in place, or ``delete_fill`` is
        False) and the leftovers it took over, and record its ``state``."""
        if delete_fill and job.new_gen != job.old_gen:
            self.ctx.queues.delete(job.new_url)
        self.retire_leftovers(job)
        self.ctx.seek_jobs.save(seek_jobs.ended(job, state, self.ctx.clock()))

    def _from_log(self, name: Name, old: SubscriptionRecord, restore: Restore, now: float, snapshot: str = "",
                  backlog_key: str = "") -> SeekOutcome:
        new = self._new_generation(old)
        job = self._start_job(old, new, restore, now, snapshot, backlog_key)
        try:
            sent, last, done = self.replay(new, restore, restore.scan_from_ms, "", now,
                                           self.ctx.config.seek_inline_max_messages)
        except Exception:
            self.end(job, FAILED)
            raise
        lease_until, job = job.lease_until, seek_jobs.advanced(job, last, sent, self.ctx.clock())
        if not done:  # the rest is the seek worker's, a chunk per invocation
            self.ctx.seek_jobs.save(dataclasses.replace(job, background=True))
            self.ctx.invoker.invoke(self.ctx.config.seek_function, worker_event(job))
            log.info("seek of %s continues in the background after %d messages", name.path, sent)
            return SeekOutcome(sent, new.queue_gen, background=True)
        # Recorded before the swap, the call's lease kept: if the call dies after the swap, maintenance finishes
        # the seek from this cursor instead of filling the new generation again from the seek's start.
        job = dataclasses.replace(job, lease_until=lease_until)
        self.ctx.seek_jobs.save(job)
        return SeekOutcome(self.complete(job, old, new, restore, swapped=False), new.queue_gen)

    def complete(self, job: SeekJob, old: SubscriptionRecord, new: SubscriptionRecord, restore: Restore,
                 swapped: bool) -> int:
        """Swap the filled generation in (unless a crash left it ``swapped`` already), enqueue what was published
        meanwhile, retire the old queue and mark the seek done; returns the messages restored in all."""
        name = names.parse(job.subscription, "subscriptions")
        if not swapped:
            try:
                self.ctx.resources.swap_queue(name, old, new.queue_url, new.queue_gen, self.ctx.seek_jobs.guard(job))
            except Exception:  # replaced by a later seek, or the subscription changed: this seek ends here
                self.end(job, FAILED)
                raise
            push_config.sync(self.ctx, old, new)
            exports.sync(self.ctx, old, new)
        # What was published while the new generation filled (the log item is written after fan-out) ...
        sent, last = job.restored, job.cursor
        more, last, _ = self.replay(new, restore, job.read_from_ms(), last, self.ctx.clock())
        # ... and what a publish that read the topic's subscriptions before the swap sent to the old queue.
        sent += more + self._rescue(old, new, restore, last, swapped)
        self._retire(name, old, new)
        self.retire_leftovers(job)
        self.ctx.seek_jobs.save(seek_jobs.ended(dataclasses.replace(job, restored=sent, cursor=last), SUCCEEDED,
                                                self.ctx.clock()))
        return sent

    def _retire(self, name: Name, old: SubscriptionRecord, new: SubscriptionRecord) -> None:
        self.ctx.queues.delete(old.queue_url)
        log.info("seek of %s: queue generation %d replaces %d", name.path, new.queue_gen, old.queue_gen)

    def _rescue(self, old: SubscriptionRecord, new: SubscriptionRecord, restore: Restore, last: str,
                swapped: bool) -> int:
        """Move the old queue's messages of requests after ``last`` (the log had no item for them yet) into the
        new generation; the rest of the old queue goes with it. Resuming after a crash, the old queue may
        already be gone."""
        if swapped and not self.ctx.queues.backlog(old.queue_url):  # 0 also when the queue is gone
            return 0
        late = [e for _, e in hold_backlog(self.ctx, old)
                if e is not None and ids.split_message_id(e.message_id)[0] > last
                and restore.wants(e.message_id, e.ordering_key)]
        late.sort(key=lambda e: e.message_id)  # ids sort by publish time: each ordering key in its order
        return self._send(new, [queue_message(new, e) for e in late])

    def replay(self, rec: SubscriptionRecord, restore: Restore, from_ms: int, after: str, now: float,
               limit: int = 0) -> tuple[int, str, bool]:
        """Send the topic's retained messages that ``restore`` wants to ``rec``'s queue, a batch of publish
        requests at a time, reading no further than the publish request that brings the messages read to
        ``limit`` (0: no limit); returns (messages sent, the last request id read, whether the log was read to
        its end)."""
        sent, read, last = 0, 0, after
        inline_max = self.ctx.config.inline_max_bytes
        for batch in self.ctx.history.messages(rec.spec.topic, from_ms, now, after, limit):
            out: list[Outgoing] = []
            for request in batch:
                last = request.entry.request_id
                read += request.entry.count
                out.extend(to_outgoing(rec, request.entry, r.message, r.offset, inline_max) for r in request.messages
                           if restore.wants(r.message.message_id, r.message.ordering_key)
                           and matches_filter(rec, r.message.attributes))
            sent += self._send(rec, out)
        return sent, last, not limit or read < limit

    def _send(self, rec: SubscriptionRecord, out: list[Outgoing]) -> int:
        if not out:
            return 0
        result = self.ctx.queues.send(rec.queue_url, out)
        if result.failed:
            raise Unavailable("The seek could not enqueue every message; try again.")
        return len(out) - len(result.dropped)

    def _trim(self, old: SubscriptionRecord, from_ms: int) -> SeekOutcome:
        """Without retained acks: drop the waiting messages published before ``from_ms``, in place; the rest
        stay where they are (each ordering key in its order) and messages leased by a subscriber stay leased.
        An ordered queue hands out a key's next messages only once the ones before are gone: it is scanned
        again while a round drops something. A queue message holding later messages too (an ordered pack)
        stays whole: its earlier ones come again (at least once). Nothing in the queue predates the
        subscription: a seek to before it was created scans nothing."""
        while from_ms > int(old.created * 1000):
            waiting = hold_backlog(self.ctx, old)
            by_message: dict[str, list[Held]] = {}
            for r, e in waiting:
                by_message.setdefault(r.receipt, []).append((r, e))
            drop = [held[0][0] for held in by_message.values()
                    if all(e is None or ids.publish_ms(e.message_id) < from_ms for _, e in held)]
            gone = {r.receipt for r in drop}
            keep = [held[0][0] for receipt, held in by_message.items() if receipt not in gone]
            if drop:
                self.ctx.queues.delete_batch(old.queue_url, [r.receipt for r in drop])
            release(self.ctx, old, keep, waiting)
            if not drop or not old.spec.enable_message_ordering:
                return SeekOutcome(sum(1 for r, _ in waiting if r.receipt not in gone), old.queue_gen)
        return SeekOutcome(0, old.queue_gen)


def worker_event(job: SeekJob) -> dict[str, Any]:
    """The seek worker's event: which subscription's seek to go on with."""
    return {"subscription": job.subscription, "seekId": job.seek_id}
