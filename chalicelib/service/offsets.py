"""AMS's ``:offsets``, ``:timeToOffset`` and ``:modifyOffset`` on Metro's model (core/replay/offsets.py): an offset is
a publish time in epoch milliseconds, and moving the offset is a seek to that time (service/seek.py)."""

from __future__ import annotations

from chalicelib.core import ids, names
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.replay.offsets import OffsetAnswer, Offsets, check_offset, offsets
from chalicelib.core.replay.seek import earliest_retained
from chalicelib.core.wire.models import Subscription
from chalicelib.core.wire.requests import UpdateSubscriptionRequest
from chalicelib.service.admin import AdminService
from chalicelib.service.context import Context
from chalicelib.service.live_usage import message_counts
from chalicelib.service.seek import SeekService


class OffsetService:
    def __init__(self, ctx: Context, admin: AdminService, seek: SeekService) -> None:
        self.ctx = ctx
        self.admin = admin
        self.seeker = seek

    def offsets(self, name: Name) -> Offsets:
        """Three reads: the subscription (cached), its topic's newest log item, its queue's counts."""
        return self._offsets(self.admin.get_subscription(name))

    def time_to_offset(self, name: Name, when_ms: int) -> OffsetAnswer:
        """The offset of the first message published at or after ``when_ms``; ``max`` when there is none."""
        rec = self.admin.get_subscription(name)
        bounds = self._offsets(rec, count_waiting=False)
        first = self.ctx.bounds.first_from(rec.spec.topic, max(when_ms, bounds.min))
        return OffsetAnswer(ids.publish_ms(first) if first is not None else bounds.max)

    def modify_offset(self, name: Name, offset: int) -> Offsets:
        """Seek to ``offset``: retained messages published from it on are delivered again, earlier ones count
        as acknowledged; the position is kept for ``current``."""
        rec = self.admin.get_subscription(name)
        check_offset(offset, self._offsets(rec, count_waiting=False))
        self.seeker.seek_to_time(name, offset / 1000)
        moved = UpdateSubscriptionRequest(Subscription(ams_offset_ms=offset), ("ams_offset_ms",))
        return self._offsets(self.admin.patch_subscription(name, moved))

    def _offsets(self, rec: SubscriptionRecord, count_waiting: bool = True) -> Offsets:
        topic = self.ctx.resources.get_topic(names.parse(rec.spec.topic, "topics")) if rec.attached else None
        now = self.ctx.clock()
        floor_ms = int(earliest_retained(rec.spec, topic.spec if topic else None, rec.created, now) * 1000)
        newest = self.ctx.bounds.newest(rec.spec.topic) if rec.attached else None
        waiting = sum(message_counts(self.ctx, rec)) if count_waiting else 0
        return offsets(floor_ms, ids.publish_ms(newest) if newest else None, rec.spec.ams_offset_ms,
                       int(rec.created * 1000), waiting)
