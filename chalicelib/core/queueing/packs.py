"""Packs: several Pub/Sub messages in one SQS message, each still acknowledged, nacked and counted alone.

SQS bills one request per started 64 KiB of a request's payload, so ten 1 KiB messages sent as ten queue
messages cost what one queue message holding all ten costs per send, receive and delete: packing the
messages of a publish request divides a subscription's SQS requests by the messages per pack
(docs/decisions/sqs-packs.md).

- Which subscriptions get packs: :func:`packable` (pull subscriptions, ordered and exactly-once ones
  included, without dead-lettering). Any other reader that meets a pack (a subscription that became push or
  dead-lettering after the pack was sent,
  a seek or snapshot scanning the backlog) explodes it: sends its open messages back one per queue message
  and deletes the pack (service/packs.py).
- Building: :func:`groups` plans which consecutive envelopes share a pack.
- Settling: a pull hands out some messages of a pack (``handed`` of its ``size``); every other message of
  the pack is settled already (acknowledged, or sent back on its own). An acknowledge or nack that names all
  the messages one delivery handed out settles the pack with one SQS call, as for a single message. One
  that names only some of them records them in the pack's state item (store/pack_states.py: ``done``
  indexes, and ``nacked`` as ``lease:index``); the request that leaves nothing of its delivery open
  deletes the pack, or makes it visible again when some of its messages were nacked (:func:`next_step`).
  A redelivered pack (receive count above 1) is read with its state, and only its open messages are
  delivered.
- Ordered and exactly-once subscriptions (:func:`keeps_whole`): a pull that cannot take all of a pack's open
  messages hands out the first ones and keeps the pack (sent back, the rest would go behind the key's later
  messages, or leave the pack's exactly-once lease); their ack ids carry
  which messages the delivery holds (``kept``), and the request that settles the last of them makes the pack
  visible again at once (:attr:`Step.RELEASE`), so the rest follows in order.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from chalicelib.core.queueing import sqs_batches
from chalicelib.core.records import SubscriptionRecord

PACK_BYTES = 65_536  # SQS bills each started 64 KiB of payload as one request
# Packs are made of requests bringing a subscription more messages than one SendMessageBatch holds: up to ten
# go in one send either way, and single messages keep SQS's counts of the queue exact.
PACK_FROM = 11


def worth_packing(rec: SubscriptionRecord, messages: int) -> bool:
    """Whether a publish request's ``messages`` for ``rec`` go in packs."""
    return messages >= PACK_FROM and packable(rec)


def keeps_whole(rec: SubscriptionRecord) -> bool:
    """Whether the rest of a pack a pull splits stays in the pack rather than going back on its own: an ordered
    subscription's would go behind the key's later messages, an exactly-once subscription's would leave the pack's
    lease (a copy of the pack, held by another delivery, would then be delivered twice)."""
    return rec.spec.enable_message_ordering or rec.spec.enable_exactly_once_delivery


def packable(rec: SubscriptionRecord) -> bool:
    """Whether messages for ``rec`` travel in packs: pull subscriptions without a dead-letter policy (push, export
    and dead-lettering subscriptions keep one message per queue message, docs/decisions/sqs-packs.md). An ordered
    subscription's packs hold one ordering key's messages each."""
    spec = rec.spec
    return not (spec.dead_letter_policy or spec.is_push or spec.cloud_storage_config)


def groups(sizes: Sequence[int], max_members: int, max_bytes: int = PACK_BYTES) -> list[list[int]]:
    """Consecutive envelopes (``sizes``: each one's escaped JSON in bytes) planned into packs of at most
    ``max_members`` envelopes and ``max_bytes`` of body (brackets and commas included); an envelope larger
    than that travels alone."""
    return sqs_batches.plan([s + 1 for s in sizes], max_entries=max(1, max_members), max_bytes=max_bytes - 1)


@dataclass(frozen=True)
class Member:
    """One message of a pack as a delivery handed it out (what its ack id says)."""

    receipt: str
    pack: str  # the pack's SQS message id
    index: int
    size: int  # messages in the pack
    handed: int  # messages of the pack the same delivery handed out
    lease: str  # the delivery (one pull) that handed it out
    kept: int = 0  # ordered: a bit per message the delivery handed out, when it left others of the pack open

    def held(self) -> set[int]:
        return {i for i in range(self.size) if self.kept >> i & 1}

    @property
    def tag(self) -> str:
        """How a nack of this delivery's message is recorded in the pack's state."""
        return f"{self.lease}:{self.index}"


@dataclass(frozen=True)
class PackState:
    """What requests settled of a pack so far."""

    done: frozenset[int] = frozenset()  # acknowledged, or sent back in a queue message of their own
    nacked: frozenset[str] = frozenset()  # ``lease:index`` of messages a delivery nacked

    def nacked_by(self, lease: str) -> set[int]:
        prefix = lease + ":"
        return {int(tag[len(prefix):]) for tag in self.nacked if tag.startswith(prefix)}


class Step(enum.Enum):
    WAIT = "wait"  # some message of this delivery is still open: nothing to do to the pack
    DELETE = "delete"  # every message is settled: delete the pack
    REDELIVER = "redeliver"  # the delivery is over and some of its messages were nacked: make the pack visible
    RELEASE = "release"  # the delivery is over and left the pack's rest open: make the pack visible at once


def next_step(state: PackState, member: Member) -> Step:
    """What the pack needs once ``state`` holds what this request recorded (``member``: any message of the
    delivery the request settled)."""
    nacked = state.nacked_by(member.lease) - state.done
    if member.kept:
        if not member.held() <= state.done | nacked:
            return Step.WAIT
        if len(state.done) >= member.size:
            return Step.DELETE
        return Step.REDELIVER if nacked else Step.RELEASE
    if len(state.done) + len(nacked) < member.size:
        return Step.WAIT
    return Step.REDELIVER if nacked else Step.DELETE


@dataclass
class Delivered:
    """The messages one request names of one delivery of one pack."""

    members: list[Member] = field(default_factory=list)

    @property
    def first(self) -> Member:
        return self.members[0]

    @property
    def indexes(self) -> set[int]:
        return {m.index for m in self.members}

    @property
    def whole(self) -> bool:
        """Whether the request names every message the delivery handed out, and that delivery left nothing of the
        pack open: one SQS call settles the pack, with no state."""
        return not self.first.kept and len(self.indexes) >= self.first.handed


def by_delivery(members: Iterable[Member]) -> list[Delivered]:
    """Group a request's pack members by pack and delivery, in first-seen order."""
    out: dict[tuple[str, str, str], Delivered] = {}
    for m in members:
        out.setdefault((m.pack, m.lease, m.receipt), Delivered()).members.append(m)
    return list(out.values())
