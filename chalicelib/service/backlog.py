"""A subscription's waiting messages, received and held so a seek or a snapshot can look at all of them.

Every waiting message is received (ten per ReceiveMessage) and held hidden until :func:`release` hands
back the ones that stay (one ChangeMessageVisibilityBatch per ten); a held message is not received twice,
so the scan ends. These receives are not delivery attempts: they are recorded as skipped receives for the
subscriptions that count attempts (service/delivery.Attempts). Messages a subscriber holds (leased,
not yet acknowledged) are not visible and are not part of the result.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.core.queueing import envelope
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.service.delivery import Attempts
from chalicelib.store.queues import Received

HOLD_SECONDS = 300  # how long held messages stay hidden if the caller fails before releasing them

Held = tuple[Received, envelope.Envelope | None]


def hold_backlog(ctx: Context, rec: SubscriptionRecord) -> list[Held]:
    """Receive and hold every waiting message of the subscription's queue, with its envelope (None if
    the body is not one)."""
    held: list[Held] = []
    for batch in ctx.queues.drain(rec.queue_url, HOLD_SECONDS):
        held.extend((r, _envelope(r.body)) for r in batch)
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
    ctx.queues.change_visibility_batch(rec.queue_url, [(r.receipt, 0) for r in keep])


def _envelope(body: str) -> envelope.Envelope | None:
    try:
        return envelope.decode(body)
    except (ValueError, KeyError, TypeError):
        return None
