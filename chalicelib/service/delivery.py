"""The delivery steps pull and push share, over one value per received message (:class:`Delivery`).

decode -> attempts (one skip read per batch) -> dead-letter (past maxDeliveryAttempts, service/deadletter.py)
-> [pull: exactly-once claim] -> bodies (inline; one S3 range GET per raw object; the Parquet archive once
compaction deleted the raw object) -> deliver -> activity mark (one write per subscription per hour).

deliveryAttempt is SQS's ApproximateReceiveCount minus the receives that were not deliveries (:class:`Attempts`,
over the SkipStore).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chalicelib.core import names
from chalicelib.core.queueing import envelope
from chalicelib.core.queueing.deadletter import tracks_attempts
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.ttlcache import TtlCache
from chalicelib.service.context import Context

log = logging.getLogger("metro.delivery")

ACTIVITY_MARK_SECONDS = 3600.0


@dataclass
class Delivery:
    """One received SQS message on its way to a subscriber."""

    receipt: str
    receive_count: int
    env: envelope.Envelope | None  # None: the queue body is not an envelope (it can never be delivered)
    raw_size: int = 0  # length of the queue body
    key: str = ""  # the batch's id for it (push: the SQS message id; pull: the receipt)
    group: str = ""  # push: the lane it waits in (the ordering key's message group, or its own)
    skips: int = 0  # earlier receives that were not deliveries
    data: bytes | None = None  # the body, once fetched
    pack: str = ""  # the pack holding it, by content (its first message id and size; "": the queue message holds
    # it alone)
    index: int = 0  # its place in the pack
    pack_size: int = 1  # messages in the pack
    split: bool = False  # ordered: the pull left other open messages of its pack in it (core/queueing/packs.py)

    @property
    def attempt(self) -> int:
        """deliveryAttempt: SQS's receive count less the receives that were not deliveries."""
        return max(1, self.receive_count - self.skips)

    @property
    def message_id(self) -> str:
        return self.env.message_id if self.env is not None else ""

    @property
    def size(self) -> int:
        """Bytes this message adds to a response: its data, inline or in S3 (not the queue body's length)."""
        return self.env.size if self.env is not None else self.raw_size


def decode(body: str, receipt: str, receive_count: int, key: str = "", group: str = "") -> Delivery:
    """Decode a queue body holding one envelope; an undecodable one is logged and kept with ``env`` None."""
    return decode_received(body, receipt, receive_count, key, group)[0]


def decode_received(body: str, receipt: str, receive_count: int, key: str = "", group: str = "") -> list[Delivery]:
    """Decode a received queue body once: one delivery, or one per message of a pack (core/queueing/packs.py),
    each counting the receives of the queue messages it travelled in before. An undecodable body is logged and
    kept as one delivery with ``env`` None."""
    try:
        envs, packed = envelope.decode_all(body)
    except (ValueError, KeyError, TypeError):
        log.error("message %s has a malformed body; it is dropped", key or receipt[:16])
        return [Delivery(receipt, receive_count, None, len(body), key or receipt, group)]
    if not packed:
        env = envs[0]
        return [Delivery(receipt, receive_count + env.prior, env, len(body), key or receipt, group)]
    pack = f"{envs[0].message_id}+{len(envs)}"  # its content: the same for a pack fanned out twice
    return [Delivery(receipt, receive_count + env.prior, env, len(body) // len(envs), key or receipt, group,
                     pack=pack, index=i, pack_size=len(envs)) for i, env in enumerate(envs)]


class Attempts:
    """Turns receive counts into delivery attempts, and remembers receives that were not deliveries."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def skips(self, rec: SubscriptionRecord, counts: Sequence[tuple[str, int]]) -> dict[str, int]:
        """Skipped receives per message id, for (message id, receive count) pairs; one read per batch."""
        wanted = [mid for mid, count in counts if count > 1]
        if not wanted or not tracks_attempts(rec):
            return {}
        return self.ctx.skips.get(rec.name, rec.queue_gen, wanted)

    def skipped(self, rec: SubscriptionRecord, previous: dict[str, int]) -> None:
        """These messages (id -> skips so far) were received and handed back undelivered: count one more."""
        if not previous or not tracks_attempts(rec):
            return
        expires = int(self.ctx.clock() + rec.spec.retention_seconds)
        self.ctx.skips.put(rec.name, rec.queue_gen, {mid: n + 1 for mid, n in previous.items()}, expires)


class Steps:
    """The shared delivery steps of one process (pull service, push handler, dead-letter sweep); forwarding to
    the dead-letter topic is service/deadletter.py's."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.attempts = Attempts(ctx)
        self.activity = ActivityMark(ctx)

    def count_attempts(self, rec: SubscriptionRecord, deliveries: Sequence[Delivery]) -> None:
        """Set each delivery's skips (one read for the batch's redeliveries, none without a policy)."""
        skips = self.attempts.skips(rec, [(d.env.message_id, d.receive_count) for d in deliveries
                                          if d.env is not None])
        for d in deliveries:
            d.skips = skips.get(d.message_id, 0)

    def skipped(self, rec: SubscriptionRecord, deliveries: Sequence[Delivery]) -> None:
        """These were received and handed back undelivered: not delivery attempts."""
        self.attempts.skipped(rec, {d.message_id: d.skips for d in deliveries if d.env is not None})

    def fetch_bodies(self, deliveries: Sequence[Delivery]) -> None:
        """Fill in ``data``: inline bodies as they are, S3 bodies with one range GET per raw object, the
        archive for raw objects compaction deleted. A body stored nowhere stays None."""
        spans: dict[str, tuple[int, int]] = {}
        for stored in _stored(deliveries):
            lo, hi = spans.get(stored.s3_key, (stored.offset, stored.offset + stored.length))
            spans[stored.s3_key] = (min(lo, stored.offset), max(hi, stored.offset + stored.length))
        blobs = {key: (lo, self.ctx.log.read_range(key, lo, hi)) for key, (lo, hi) in spans.items()}
        gone: dict[str, list[str]] = defaultdict(list)
        for d in deliveries:
            e = d.env
            if e is None or d.data is not None:
                continue
            if e.data is not None:
                d.data = e.data
                continue
            lo, blob = blobs[e.s3_key]
            if blob is None:
                gone[e.s3_key].append(e.message_id)
            else:
                d.data = blob[e.offset - lo : e.offset - lo + e.length]
        archived: dict[str, bytes] = {}
        for key, ids in gone.items():
            archived.update(self.ctx.log.read_archived(key, ids))
        for d in deliveries:
            if d.data is None and d.message_id in archived:
                d.data = archived[d.message_id]


def _stored(deliveries: Sequence[Delivery]) -> list[envelope.Envelope]:
    """The envelopes whose body is in S3 and not fetched yet."""
    return [d.env for d in deliveries if d.env is not None and not d.env.inline and d.data is None]


class ActivityMark:
    """Records subscriber activity (expirationPolicy) at most once an hour per subscription and process."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._marked: dict[str, float] = {}
        self._lock = threading.Lock()

    def mark(self, subscription: str) -> None:
        now = self.ctx.clock()
        with self._lock:
            if now - self._marked.get(subscription, 0.0) <= ACTIVITY_MARK_SECONDS:
                return
            self._marked[subscription] = now
        self.ctx.resources.mark_active(names.parse(subscription, "subscriptions"), now)


class SubscriptionCache:
    """A queue's subscription record, trusted for ``ttl`` seconds of ``monotonic`` time; None if unknown.

    The queue -> subscription name mapping never changes, so it is kept without expiry.
    """

    def __init__(self, ctx: Context, ttl: float, monotonic: Callable[[], float]) -> None:
        self.ctx = ctx
        self.monotonic = monotonic
        self._records: TtlCache[str, tuple[SubscriptionRecord | None]] = TtlCache(ttl)
        self._names: dict[str, str] = {}

    def get(self, queue_key: str) -> SubscriptionRecord | None:
        now = self.monotonic()
        hit = self._records.get(queue_key, now)
        if hit is not None:
            return hit[0]
        name = self._names.get(queue_key) or self.ctx.push.index_get(queue_key)
        rec = self.ctx.resources.get_subscription(names.parse(name, "subscriptions")) if name else None
        if name:
            self._names[queue_key] = name
        self._records.put(queue_key, (rec,), now)
        return rec
