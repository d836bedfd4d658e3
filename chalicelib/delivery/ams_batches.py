"""AMS push with ``maxMessages`` > 1: the batch's messages go out in POSTs of up to that many messages.

Each chunk travels through the scheduler as its first message (one lane each, so the throttle's window
and delays apply per POST); the POST carries the whole chunk, and its outcome is every message's outcome.
"""

from __future__ import annotations

from collections import deque

from chalicelib.core.records import SubscriptionRecord
from chalicelib.delivery.scheduler import Batch
from chalicelib.service.delivery import Delivery


def chunk_size(rec: SubscriptionRecord) -> int:
    """Messages per POST: AMS's ``maxMessages`` (1 for every other subscription, and for ordered ones)."""
    push = rec.spec.ams_push
    if push is None or rec.spec.enable_message_ordering:
        return 1
    return max(1, push.max_messages)


def group(batch: Batch, lanes: dict[str, deque[Delivery]], size: int) -> dict[str, deque[Delivery]]:
    """One lane per chunk of ``size`` messages; ``batch.chunks`` remembers each chunk by its first message."""
    waiting = [d for lane in lanes.values() for d in lane]
    grouped: dict[str, deque[Delivery]] = {}
    for start in range(0, len(waiting), size):
        chunk = waiting[start:start + size]
        batch.chunks[chunk[0].key] = chunk
        grouped[chunk[0].key] = deque([chunk[0]])
    return grouped


def spread(batch: Batch) -> None:
    """Give every message of a chunk its first message's outcome."""
    for first, chunk in batch.chunks.items():
        outcome = batch.results.get(first)
        for d in chunk[1:]:
            if outcome is not None:
                batch.results[d.key] = outcome
            if first in batch.pushed:
                batch.pushed.add(d.key)
