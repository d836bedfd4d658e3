"""SendMessageBatch requests planned within SQS's limits (core/queueing/sqs_limits.py): pure, no AWS.

:func:`plan` packs messages, in order, into batches of at most 10 entries and 262,144 bytes; a message
larger than that on its own (only a pointer envelope with very many escaped attributes can be) goes
alone. :func:`entry` writes one batch entry: the body escaped, group and deduplication ids made valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.core.queueing import sqs_limits


@dataclass(frozen=True)
class Outgoing:
    body: str  # compact JSON, as core/queueing/envelope.py writes it
    group_id: str = ""  # FIFO queues only: the ordering key (or message id); made valid by :func:`entry`
    dedup_id: str = ""
    delay: int = 0


def entry(entry_id: str, message: Outgoing) -> dict[str, Any]:
    """One SendMessageBatch entry for ``message``."""
    out: dict[str, Any] = {"Id": entry_id, "MessageBody": sqs_limits.escape_body(message.body)}
    if message.group_id:
        out["MessageGroupId"] = sqs_limits.safe_id(message.group_id)
        out["MessageDeduplicationId"] = sqs_limits.safe_id(message.dedup_id or message.group_id)
    if message.delay:
        out["DelaySeconds"] = message.delay
    return out


def plan(sizes: Sequence[int], indexes: Sequence[int] | None = None,
         max_entries: int = sqs_limits.BATCH_ENTRIES, max_bytes: int = sqs_limits.BATCH_BYTES) -> list[list[int]]:
    """Pack messages (``sizes[i]``: message i's escaped body in bytes) into batches, order kept.

    ``indexes`` selects which messages to pack (all by default). Each batch is a list of indexes with at
    most ``max_entries`` of them and at most ``max_bytes`` in all, except a single message larger than
    ``max_bytes``, which is a batch by itself.
    """
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0
    for i in range(len(sizes)) if indexes is None else indexes:
        size = sizes[i]
        if current and (len(current) >= max_entries or total + size > max_bytes):
            batches.append(current)
            current, total = [], 0
        current.append(i)
        total += size
    if current:
        batches.append(current)
    return batches


def body_sizes(messages: Sequence[Outgoing]) -> list[int]:
    return [sqs_limits.body_bytes(m.body) for m in messages]
