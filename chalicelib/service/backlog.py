"""A subscription's waiting messages, received and held so a seek or a snapshot can look at all of them.

Every waiting message is received (ten per ReceiveMessage) and held hidden until :func:`release` hands
back the ones that stay (one ChangeMessageVisibilityBatch per ten); a held message is not received twice,
so the scan ends. These receives are not delivery attempts: they are recorded as skipped receives for the
subscriptions that count attempts (service/delivery.Attempts). Messages a subscriber holds (leased,
not yet acknowledged) are not visible and are not part of the result. A pack (core/queueing/packs.py) is
exploded when it is met: its open messages go back to the queue one per queue message, and the scan
receives them like the others; an ordered or exactly-once subscription's pack stays whole (sent back, its
messages would go behind their key's later ones, or leave the pack's lease), each of its open messages listed
with the queue message holding it.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.core.queueing import envelope
from chalicelib.core.queueing.packs import keeps_whole
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.service.delivery import Attempts, decode_received
from chalicelib.service.packs import Packs
from chalicelib.store.queues import Received

HOLD_SECONDS = 300  # how long held messages stay hidden if the caller fails before releasing them

Held = tuple[Received, envelope.Envelope | None]


def hold_backlog(ctx: Context, rec: SubscriptionRecord) -> list[Held]:
    """Receive and hold every waiting message of the subscription's queue, with its envelope (None if
    the body is not one)."""
    held: list[Held] = []
    packs = Packs(ctx)
    for batch in ctx.queues.drain(rec.queue_url, HOLD_SECONDS):
        opened = [(r, decode_received(r.body, r.receipt, r.receive_count)) for r in batch]
        held.extend((r, ds[0].env) for r, ds in opened if not ds[0].pack)
        packed = packs.open(rec, [d for _, ds in opened for d in ds if d.pack])
        if packed and keeps_whole(rec):  # kept whole: its messages share the queue message
            by_receipt = {r.receipt: r for r, _ in opened}
            held.extend((by_receipt[d.receipt], d.env) for d in packed)
        elif packed:
            packs.explode(rec, packed)
    return held


def release(ctx: Context, rec: SubscriptionRecord, keep: Sequence[Received], held: Sequence[Held]) -> None:
    """Hand ``keep`` back at once, and record their receives as skipped (not delivery attempts)."""
    if not keep:
        return
    wanted = {r.receipt for r in keep}
    counted = [(e.message_id, r.receive_count) for r, e in held if e is not None and r.receipt in wanted]
    attempts = Attempts(ctx)
    skips = attempts.skips(rec, counted)
    attempts.skipped(rec, {mid: skips.get(mid, 0) for mid, _ in counted})
    ctx.queues.change_visibility_batch(rec.queue_url, [(r, 0) for r in dict.fromkeys(r.receipt for r in keep)])

