"""Exactly-once delivery's leases (store/leases.py): one conditional write per message, or per pack.

A message alone in its queue message has its own lease. The messages of a pack (core/queueing/packs.py) share
one lease, named by the pack's content (its first message id and size), so that a pack fanned out twice is one
lease: the claim of a delivery returns the indexes acknowledged already (never delivered again), an acknowledge
adds its indexes while the delivery still holds the pack (an index acknowledged before fails), a new deadline
moves the pack's. A nack of part of a delivery leaves the lease to the messages still held; the pack comes back
once that delivery is settled (service/packs.py), and its lease is let go then (:meth:`ExactlyOnce.let_go`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from chalicelib.core.queueing.ackids import AckId
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.service.delivery import Delivery
from chalicelib.store.leases import exact_key

FAILED = "PERMANENT_FAILURE_INVALID_ACK_ID"

Claimed = tuple[list[Delivery], list[str], list[Delivery]]  # kept, receipts acknowledged already, held elsewhere


def _groups(acks: Sequence[tuple[str, AckId]]) -> list[list[tuple[str, AckId]]]:
    """Ack ids by lease: each single message alone, a pack's ids of one delivery together."""
    out: dict[tuple[str, str], list[tuple[str, AckId]]] = defaultdict(list)
    for text, ack in acks:
        out[(ack.pack, ack.lease_id) if ack.pack else (text, "")].append((text, ack))
    return list(out.values())


def _key(ack: AckId) -> str:
    return exact_key(ack.queue_gen, "p" + ack.pack if ack.pack else ack.message_id)


class ExactlyOnce:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # -- pull -----------------------------------------------------------------------------------------
    def claim(self, rec: SubscriptionRecord, token: str, deliveries: list[Delivery]) -> Claimed:
        """Lease each message, or each pack, for this delivery. Each lease's deadline counts from its own write,
        not from the first: on a slow machine a pull's claims take a while, and the client's deadline starts no
        earlier than the answer (docs/decisions/pull-leases.md)."""
        leases: dict[str, list[Delivery]] = defaultdict(list)
        for d in deliveries:
            leases["p" + d.pack if d.pack else d.message_id].append(d)

        def one(item: tuple[str, list[Delivery]]) -> tuple[str, set[int]]:
            mid, ds = item
            now = self.ctx.clock()
            deadline, expires = now + rec.spec.ack_deadline, int(now + rec.spec.retention_seconds)
            key = exact_key(rec.queue_gen, mid)
            if not ds[0].pack:
                return self.ctx.exact.claim(rec.name, key, token, deadline, now, expires), set()
            ok, acked = self.ctx.exact.claim_pack(rec.name, key, token, deadline, now, expires)
            return ("ok" if ok else "held"), acked

        kept: list[Delivery] = []
        done: list[str] = []
        held: list[Delivery] = []
        for (_, ds), (state, acked) in zip(leases.items(), self.ctx.exact.each(one, list(leases.items())),
                                           strict=True):
            if state == "held":  # another delivery holds it: this receive was not a delivery
                held.extend(ds)
            elif state == "acked" or (ds[0].pack and len(acked) >= ds[0].pack_size):
                done.append(ds[0].receipt)  # an already acknowledged duplicate: removed for good
            else:  # copies of the message (or pack) in the same receive wait their turn, as held
                first = ds[0].receipt
                kept.extend(d for d in ds if d.receipt == first and d.index not in acked)
                held.extend(d for d in ds if d.receipt != first)
        return kept, done, held

    # -- acknowledge, modifyAckDeadline ---------------------------------------------------------------------
    def acknowledge(self, rec: SubscriptionRecord, acks: list[tuple[str, AckId]],
                    now: float) -> tuple[list[AckId], dict[str, str]]:
        """Acknowledge under each lease: the ids that passed, and the failed ones' errors."""
        def one(group: list[tuple[str, AckId]]) -> set[str]:
            first = group[0][1]
            if not first.pack:
                ok = self.ctx.exact.ack(rec.name, _key(first), first.lease_id, now)
                return set() if ok else {group[0][0]}
            before = self.ctx.exact.ack_pack(rec.name, _key(first), first.lease_id, {a.index for _, a in group}, now)
            return {t for t, _ in group} if before is None else {t for t, a in group if a.index in before}

        return self._apply(acks, one)

    def extend(self, rec: SubscriptionRecord, acks: list[tuple[str, AckId]], until: float, now: float,
               nack: bool) -> tuple[list[AckId], dict[str, str]]:
        """Move each lease's deadline to ``until``; a nack naming part of a pack's delivery leaves it alone."""
        def one(group: list[tuple[str, AckId]]) -> set[str]:
            first = group[0][1]
            if nack and first.pack and len({a.index for _, a in group}) < first.handed:
                return set()
            ok = self.ctx.exact.extend(rec.name, _key(first), first.lease_id, until, now)
            return set() if ok else {t for t, _ in group}

        return self._apply(acks, one)

    def let_go(self, rec: SubscriptionRecord, ack: AckId) -> None:
        """The delivery of a pack is over with messages nacked: its lease ends now, so the pack's next receive
        may claim it (a delivery that lost the lease meanwhile changes nothing)."""
        now = self.ctx.clock()
        self.ctx.exact.extend(rec.name, _key(ack), ack.lease_id, now - 0.001, now)

    def _apply(self, acks: list[tuple[str, AckId]],
               one: Callable[[list[tuple[str, AckId]]], set[str]]) -> tuple[list[AckId], dict[str, str]]:
        groups = _groups(acks)
        failed = set().union(*self.ctx.exact.each(one, groups)) if groups else set()
        return [a for t, a in acks if t not in failed], {t: FAILED for t, _ in acks if t in failed}
