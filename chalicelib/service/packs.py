"""Receiving, releasing and settling packs (several messages in one SQS message; core/queueing/packs.py).

- :meth:`Packs.open`: a redelivered pack's messages (any pack's, exactly-once) less the ones settled already
  (one read per batch of such packs); a pack with nothing open left is deleted.
- :meth:`Packs.release`: messages of a pack a pull does not hand out go back in queue messages of their own
  (their receives carried in the envelope), and are recorded settled in the pack.
- :meth:`Packs.explode`: a reader that does not take packs sends every open message back alone and deletes
  the pack.
- :meth:`Packs.acknowledge` / :meth:`Packs.nack`: the SQS calls an acknowledge or a nack needs; a request
  naming only some of a delivery's messages of a pack records them in the pack's state first.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Sequence

from chalicelib.core.errors import Unavailable
from chalicelib.core.queueing.ackids import AckId
from chalicelib.core.queueing.packs import Member, PackState, Step, by_delivery, next_step
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context
from chalicelib.service.delivery import Delivery
from chalicelib.service.enqueue import count_queued, in_packs, queue_message
from chalicelib.store.queues import Outgoing


def member(ack: AckId) -> Member:
    return Member(ack.receipt, ack.pack, ack.index, ack.size, ack.handed, ack.lease_id, ack.kept)


LetGo = Callable[[SubscriptionRecord, AckId], None]


class Packs:
    def __init__(self, ctx: Context, let_go: LetGo | None = None) -> None:
        self.ctx = ctx
        self._let_go = let_go  # exactly-once: ends the lease of a pack redelivered for its nacks

    def _redelivered(self, rec: SubscriptionRecord, ack: AckId) -> None:
        if self._let_go is not None and rec.spec.enable_exactly_once_delivery:
            self._let_go(rec, ack)

    def _expires(self, rec: SubscriptionRecord) -> int:
        return int(self.ctx.clock() + rec.spec.retention_seconds)

    # -- receiving ----------------------------------------------------------------------------------
    def open(self, rec: SubscriptionRecord, deliveries: list[Delivery]) -> list[Delivery]:
        """``deliveries`` less the messages of redelivered packs that are settled already. An exactly-once
        subscription reads the state of every pack: a copy of a pack fanned out twice is new to SQS, and what was
        sent back from the first copy was acknowledged under another lease."""
        exact = rec.spec.enable_exactly_once_delivery
        redelivered = list(dict.fromkeys(d.pack for d in deliveries if d.pack and (exact or d.receive_count > 1)))
        if not redelivered:
            return deliveries
        states = self.ctx.packs.get(rec.name, rec.queue_gen, redelivered)
        out = [d for d in deliveries if d.index not in states.get(d.pack, PackState()).done]
        left = {d.pack for d in out}
        finished = list(dict.fromkeys(d.receipt for d in deliveries if d.pack in states and d.pack not in left))
        if finished:
            self.ctx.queues.delete_batch(rec.queue_url, finished)
        return out

    def release(self, rec: SubscriptionRecord, rest: Sequence[Delivery], per_pack: int) -> None:
        """Send messages of packs back (in packs of at most ``per_pack``) and record them settled in their packs."""
        self._send_back(rec, rest, min(per_pack, self.ctx.config.pack_max_messages))
        by_pack: dict[str, list[int]] = defaultdict(list)
        for d in rest:
            by_pack[d.pack].append(d.index)
        for pack, indexes in by_pack.items():
            self.ctx.packs.record(rec.name, rec.queue_gen, pack, self._expires(rec), done=indexes)

    def explode(self, rec: SubscriptionRecord, deliveries: list[Delivery]) -> list[Delivery]:
        """Send every message of a pack among ``deliveries`` back alone and delete the packs; returns the
        deliveries that were not in packs."""
        members = [d for d in deliveries if d.pack]
        if not members:
            return deliveries
        self._send_back(rec, members, 1)
        self.ctx.queues.delete_batch(rec.queue_url, list(dict.fromkeys(d.receipt for d in members)))
        return [d for d in deliveries if not d.pack]

    def _send_back(self, rec: SubscriptionRecord, members: Sequence[Delivery], per_pack: int) -> None:
        """Enqueue the messages again; this receive was not a delivery of theirs, so it is not carried."""
        out: list[Outgoing] = []
        for d in members:
            assert d.env is not None
            out.append(queue_message(rec, dataclasses.replace(d.env, prior=d.receive_count - 1), again=True))
        queued = in_packs(out, per_pack)[0] if per_pack > 1 else out
        if self.ctx.queues.send(rec.queue_url, queued).failed:
            raise Unavailable(f"Messages of {rec.name} could not be queued again; try again.")
        count_queued(self.ctx, rec, len(out), len(queued))

    # -- settling -----------------------------------------------------------------------------------
    def acknowledge(self, rec: SubscriptionRecord, acks: Sequence[AckId], redeliver: Callable[[AckId], int]) -> None:
        """Delete what the acknowledged ids settle; a pack whose delivery ends with nacked messages becomes
        visible after ``redeliver`` seconds."""
        deletes = [a.receipt for a in acks if not a.pack]
        changes: list[tuple[str, int]] = []
        firsts = {(a.pack, a.lease_id, a.receipt): a for a in reversed([a for a in acks if a.pack])}
        for group in by_delivery(member(a) for a in acks if a.pack):
            m = group.first
            step = Step.DELETE if group.whole else next_step(
                self.ctx.packs.record(rec.name, rec.queue_gen, m.pack, self._expires(rec), done=sorted(group.indexes)),
                m)
            if step is Step.DELETE:
                deletes.append(m.receipt)
            elif step is not Step.WAIT:  # REDELIVER after nacks; RELEASE: the rest of an ordered pack follows at once
                first = firsts[(m.pack, m.lease, m.receipt)]
                self._redelivered(rec, first)
                changes.append((m.receipt, redeliver(first) if step is Step.REDELIVER else 0))
        if deletes:
            self.ctx.queues.delete_batch(rec.queue_url, deletes)
        if changes:
            self.ctx.queues.change_visibility_batch(rec.queue_url, changes)

    def nack(self, rec: SubscriptionRecord, acks: Sequence[tuple[AckId, int]]) -> list[tuple[str, int]]:
        """The visibility changes nacks need (receipt, seconds until redelivery): a single message's or a whole
        delivery's at once; a pack whose delivery still holds messages records the nacks and waits for them."""
        changes = {a.receipt: delay for a, delay in acks if not a.pack}
        by_id = {(a.pack, a.lease_id, a.receipt, a.index): (a, delay) for a, delay in acks if a.pack}
        for group in by_delivery(member(a) for a, _ in acks if a.pack):
            m = group.first
            delay = max(by_id[(x.pack, x.lease, x.receipt, x.index)][1] for x in group.members)
            if not group.whole:
                state = self.ctx.packs.record(rec.name, rec.queue_gen, m.pack, self._expires(rec),
                                              nacked=[x.tag for x in group.members])
                if next_step(state, m) is Step.WAIT:
                    continue
                self._redelivered(rec, by_id[(m.pack, m.lease, m.receipt, m.index)][0])
            changes[m.receipt] = max(delay, changes.get(m.receipt, 0))
        return list(changes.items())
