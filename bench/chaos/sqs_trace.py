"""The emulator's side of the ordered subscription's trace: every receive from a FIFO queue and every visibility
change on one, one JSON line each, appended to $METRO_CHAOS_SQS_TRACE by the emulator process of a fault run.

The harness's trace (bench/chaos/traffic.py) sees only what reached a puller; a pull whose answer died with the
API, or a lease that expired, shows only here. A receive line holds the wall time, the queue, the visibility it
asked for and, per message returned, its group, deduplication id (Metro's message id) and receive count, plus the
groups with a message in flight once it returned. A visibility line holds the message it changed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

_lock = threading.Lock()


def install() -> bool:
    """Wrap moto's SQS receive and visibility change when $METRO_CHAOS_SQS_TRACE names a file (after fix_moto)."""
    target = os.environ.get("METRO_CHAOS_SQS_TRACE")
    if not target:
        return False
    from moto.sqs.models import SQSBackend

    receive, change = SQSBackend.receive_message, SQSBackend.change_message_visibility

    def write(line: list[Any]) -> None:
        with _lock, open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def traced_receive(self: Any, queue_name: str, count: int, wait_seconds_timeout: int, visibility_timeout: int,
                       *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)
        got = receive(self, queue_name, count, wait_seconds_timeout, visibility_timeout, *args, **kwargs)
        if got and queue.fifo_queue:
            in_flight = sorted(queue.pending_message_groups)
            write([round(time.time(), 4), "receive", queue_name, visibility_timeout, in_flight,
                   [[m.group_id, m.deduplication_id, m.approximate_receive_count] for m in got]])
        return got

    def traced_change(self: Any, queue_name: str, receipt_handle: str, visibility_timeout: int) -> Any:
        queue = self.get_queue(queue_name)
        if queue.fifo_queue:
            ids = [m.deduplication_id for m in queue._messages if m.had_receipt_handle(receipt_handle)]
            write([round(time.time(), 4), "visibility", queue_name, visibility_timeout, ids])
        return change(self, queue_name, receipt_handle, visibility_timeout)

    setattr(SQSBackend, "receive_message", traced_receive)  # noqa: B010
    setattr(SQSBackend, "change_message_visibility", traced_change)  # noqa: B010
    return True
