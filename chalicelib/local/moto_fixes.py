"""Corrections of moto's behaviour where it differs from AWS in a way Metro's guarantees depend on, applied
wherever Metro starts moto's server in its own process (``make run``, the end-to-end tests' stack, the
benchmarks, ``make chaos``). Unlike the speed-ups (moto_speedups.py) they cannot be turned off.

1. FIFO message groups after a visibility timeout (moto 5.2.5). A receive skips the groups that have a
   message in flight. moto takes a message out of flight only when its scan reaches it visible again, and
   then re-checks the group against the messages still in flight: when several messages of one group
   expired together (a receive whose answer was lost, a puller that died), the scan skips all but the last
   of them and delivers that one first. SQS redelivers them in order. The fix takes every expired message
   out of flight before the scan, so the group's first message leads, and a FIFO receive judges every
   message's visibility at the one instant it started: moto reads the clock afresh for each message, and
   the leases of one receive end a few microseconds apart (one clock reading per message), so a lease
   that ended while the scan ran still freed its group mid-scan, after the scan had skipped the group's
   earlier messages as held. Found by ``make chaos`` (ordering violations on the ordered subscription
   after injected receive timeouts, then 9 first deliveries of one ordering key after later ones in a
   100,000-message run).
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
4. The groups in flight, read while other requests change them. moto builds a FIFO receive's set of
   groups in flight by iterating the queue's in-flight set while deletes and visibility changes on other
   server threads add to it and remove from it: ``RuntimeError: Set changed size during iteration``, a
   500 for the receive (twice in a 100,000-message ``make chaos`` run). The fix reads a copy of the set,
   taken in one step.

The fixes replace private methods of moto 5.2.5 (``MOTO_VERSION``); on any other moto they refuse to apply
(local/moto_version.py).
"""


from __future__ import annotations

import functools
import threading
import time
from typing import Any

from chalicelib.local import moto_version

MOTO_VERSION = "5.2.5"  # the release every fix below was written for and checked against
FIFO_POLL_SECONDS = 0.05


class _Instant(threading.local):
    ms: float | None = None  # the instant this thread's running FIFO receive judges visibility at


_instant = _Instant()


@functools.cache
def fix_moto() -> bool:
    """Apply the fixes in this process (once); returns whether they are in place. RuntimeError, before any
    patch, on a moto other than ``MOTO_VERSION``."""
    moto_version.require(MOTO_VERSION, "chalicelib/local/moto_fixes.py")
    _visibility_at_the_receive_instant()
    _release_expired_before_receive()
    _one_fifo_receive_at_a_time()
    _delete_under_the_queue_lock()
    _groups_in_flight_from_a_copy()
    return True


@functools.cache
def _sqs_models() -> Any:
    import moto.sqs.models as sqs_models

    return sqs_models


def _sqs_clock_ms() -> float:
    """moto's SQS clock, as installed now (the speed-ups and the tests replace it)."""
    return float(_sqs_models().unix_time_millis())


def _visibility_at_the_receive_instant() -> None:
    models = _sqs_models()  # its clock looked up per call: the speed-ups and the tests replace it

    def visible(self: Any) -> bool:  # every message of every queue, on every scan: kept lean
        now = _instant.ms
        return bool((models.unix_time_millis() if now is None else now) > self.visible_at)

    setattr(models.Message, "visible", property(visible))  # noqa: B010


def _release_expired_before_receive() -> None:
    from moto.sqs.models import SQSBackend

    original = SQSBackend.receive_message

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        pending = self.get_queue(queue_name).pending_messages
        for message in pending.copy():
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
                _instant.ms = _sqs_clock_ms()
                try:
                    got = original(self, queue_name, count, 0, visibility_timeout, *args, **kwargs)
                finally:
                    _instant.ms = None
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


def _groups_in_flight_from_a_copy() -> None:
    from moto.sqs.models import Queue

    def pending_message_groups(self: Any) -> set[str]:
        return {m.group_id for m in self._pending_messages.copy() if m.group_id is not None}

    setattr(Queue, "pending_message_groups", property(pending_message_groups))  # noqa: B010
