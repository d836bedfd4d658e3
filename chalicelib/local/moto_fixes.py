"""Corrections of moto's behaviour where it differs from AWS in a way Metro's guarantees depend on, applied
wherever Metro starts moto's server in its own process (``make run``, the end-to-end tests' stack, the
benchmarks, ``make chaos``). Unlike the speed-ups (moto_speedups.py) they cannot be turned off.

1. FIFO message groups after a visibility timeout (moto 5.2.5). A receive skips the groups that have a
   message in flight. moto takes a message out of flight only when its scan reaches it visible again, and
   then re-checks the group against the messages still in flight: when several messages of one group
   expired together (a receive whose answer was lost, a puller that died), the scan skips all but the last
   of them and delivers that one first. SQS redelivers them in order. The fix takes every expired message
   out of flight before the scan, so the group's first message leads. Found by ``make chaos``
   (ordering violations on the ordered subscription after injected receive timeouts).
2. Concurrent receives on a FIFO queue. moto's receive is not atomic: two receives running at once each
   see the group free and each takes part of it, so two pullers hold one ordering key's messages at once
   (found by ``make chaos`` with two pullers on the ordered subscription). SQS hands a group to one receive
   at a time. The fix runs a FIFO queue's receives one at a time, each without moto's own wait, and does
   the long poll itself between attempts (every 50 ms), so a waiting receive does not hold up the others.
3. Deletes racing deletes and sends. moto's ``Queue.delete_message`` rebuilds the queue's message list
   without the queue's lock, while requests run on concurrent server threads. Two deletes at once each write
   back a list built before the other's, so a message one of them deleted comes back (an acknowledged message
   is delivered again), and a message sent meanwhile (``add_message`` appends under the lock) is dropped from
   the list (an acknowledged publish is lost). Found by ``make race``: messages acknowledged within their
   deadline delivered again with their receive count one higher. The fix runs ``delete_message`` under the
   lock ``add_message`` takes.
"""


from __future__ import annotations

import functools
import threading
import time
from typing import Any

FIFO_POLL_SECONDS = 0.05


@functools.cache
def fix_moto() -> bool:
    """Apply the fixes in this process (once); returns whether they are in place."""
    _release_expired_before_receive()
    _one_fifo_receive_at_a_time()
    _delete_under_the_queue_lock()
    return True


def _release_expired_before_receive() -> None:
    from moto.sqs.models import SQSBackend

    original = SQSBackend.receive_message

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        pending = self.get_queue(queue_name).pending_messages
        for message in list(pending):
            if message.visible:
                pending.discard(message)
        return original(self, queue_name, *args, **kwargs)

    setattr(SQSBackend, "receive_message", receive_message)  # noqa: B010 (mypy refuses assigning to a method)


def _one_fifo_receive_at_a_time() -> None:
    from moto.sqs.models import SQSBackend

    original = SQSBackend.receive_message  # already releasing expired messages (fix 1)
    locks: dict[int, threading.Lock] = {}
    guard = threading.Lock()

    def lock_of(queue: Any) -> threading.Lock:
        with guard:
            return locks.setdefault(id(queue), threading.Lock())

    def receive_message(self: Any, queue_name: str, count: int, wait_seconds_timeout: int,
                        visibility_timeout: int, *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)
        if not queue.fifo_queue:
            return original(self, queue_name, count, wait_seconds_timeout, visibility_timeout, *args, **kwargs)
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        while True:
            with lock_of(queue):
                got = original(self, queue_name, count, 0, visibility_timeout, *args, **kwargs)
            if got or time.monotonic() >= deadline:
                return got
            time.sleep(FIFO_POLL_SECONDS)

    setattr(SQSBackend, "receive_message", receive_message)  # noqa: B010


def _delete_under_the_queue_lock() -> None:
    from moto.sqs.models import Queue

    unlocked = Queue.delete_message

    def delete_message(self: Any, receipt_handle: str) -> None:
        with self._messages_lock:
            unlocked(self, receipt_handle)

    setattr(Queue, "delete_message", delete_message)  # noqa: B010 (mypy refuses assigning to a method)
