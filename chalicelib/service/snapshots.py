"""Snapshots: create (capture a subscription's unacknowledged backlog), get, patch labels, list, delete.

A snapshot records when it was taken and the ids of the subscription's waiting messages at that moment
(store/snapshots.py); seeking to it (service/seek.py) restores those plus everything the topic received
since. Capturing the backlog holds the queue's waiting messages for a moment and hands them back
(service/backlog.py); these receives are not counted as delivery attempts.
"""

from __future__ import annotations

from chalicelib.core import names
from chalicelib.core.errors import AlreadyExists, FailedPrecondition, InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.replay.seek import key_bounds, snapshot_expiry
from chalicelib.core.timefmt import format_timestamp, parse_timestamp
from chalicelib.core.wire.models import Snapshot
from chalicelib.core.wire.requests import CreateSnapshotRequest, PageRequest, UpdateSnapshotRequest
from chalicelib.core.wire.responses import Page
from chalicelib.service.backlog import hold_backlog, release
from chalicelib.service.context import Context
from chalicelib.store.snapshots import SnapshotRecord, backlog_key


class SnapshotService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.store = ctx.snapshots

    def create(self, name: Name, request: CreateSnapshotRequest) -> Snapshot:
        if request.subscription.project != name.project:  # checked once the caller may consume it
            raise InvalidArgument(f"The snapshot {name.path} must be in the same project as the subscription "
                                  f"{request.subscription.path}.")
        now = self.ctx.clock()
        if self.store.find(name, now) is not None:
            raise AlreadyExists("Snapshot already exists")
        rec = self.ctx.resources.require_subscription(request.subscription)
        if not rec.attached:
            raise FailedPrecondition(f"Subscription {rec.name} is detached or its topic was deleted.")
        taken_ms = int(now * 1000)
        held = self._capture(rec)
        backlog = sorted(mid for mid, _ in held)
        bounds = key_bounds(held) if rec.spec.enable_message_ordering else {}
        expires = snapshot_expiry(now, backlog)
        spec = Snapshot(name=name.path, topic=rec.spec.topic, expire_time=format_timestamp(expires),
                        labels=request.labels)
        key = backlog_key(name, taken_ms, self.ctx.ids.token())
        self.store.put_backlog(key, backlog, bounds)
        self.store.create(name, SnapshotRecord(spec, rec.name, taken_ms, key, expires), now)
        return spec

    def _capture(self, rec: SubscriptionRecord) -> set[tuple[str, str]]:
        """The (id, ordering key) of the subscription's waiting messages (each handed back at once)."""
        held = hold_backlog(self.ctx, rec)
        release(self.ctx, rec, [r for r, _ in held], held)
        return {(e.message_id, e.ordering_key) for _, e in held if e is not None}

    def get(self, name: Name) -> Snapshot:
        return self.store.get(name, self.ctx.clock()).spec

    def patch(self, name: Name, request: UpdateSnapshotRequest) -> Snapshot:
        rec = self.store.get(name, self.ctx.clock())
        spec, expires = rec.spec, rec.expires
        if "labels" in request.update_mask:
            spec = spec.model_copy(update={"labels": request.snapshot.labels})
        if "expire_time" in request.update_mask and request.snapshot.expire_time:
            # A snapshot can be made to expire sooner, never to outlive the messages it holds.
            expires = min(expires, parse_timestamp(request.snapshot.expire_time, "expire_time"))
            spec = spec.model_copy(update={"expire_time": format_timestamp(expires)})
        self.store.update(name, SnapshotRecord(spec, rec.subscription, rec.taken_ms, rec.backlog_key, expires))
        return spec

    def delete(self, name: Name) -> None:
        rec = self.store.get(name, self.ctx.clock())
        self.store.delete(name, rec)

    def list_project(self, project: str, page: PageRequest) -> Page[Snapshot]:
        recs, nxt = self.store.list_project(names.check_project(project), page.size, page.token, self.ctx.clock())
        return Page("snapshots", tuple(r.spec for r in recs), nxt)

    def list_topic(self, topic: Name, page: PageRequest) -> Page[str]:
        self.ctx.resources.require_topic(topic)
        found, nxt = self.store.list_topic(topic.path, page.size, page.token, self.ctx.clock())
        return Page("snapshots", tuple(found), nxt)

