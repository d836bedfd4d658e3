"""Speed-ups of moto, applied where Metro starts moto's server in its own process (``make run``, the
end-to-end tests' stack, the benchmarks unless ``--no-moto-speedup``). Behaviour is unchanged; only how
fast moto does it. ``METRO_MOTO_SPEEDUP=0`` turns them off for ``make run``.

1. The SQS clock. moto's SQS scans the whole queue several times per message: ``Queue.messages`` (on
   every add, every long-poll wake-up and every receive) and ``Queue.attributes`` (on every send and,
   via the retention check, on every message received) test each stored message's ``visible``/
   ``delayed``, and each test calls ``moto.core.utils.unix_time_millis()``, which builds two datetimes
   and runs an ``import`` statement: about 10 us per message per scan. The patch replaces the SQS
   module's ``unix_time``/``unix_time_millis`` with ``time.time()`` when no datetime is passed (the same
   value). Queues still scan in O(depth); each scan is ~30x cheaper. Measured: a pull and ack of 100
   messages from a 100-message queue through ``make run`` took ~1,100 ms before, ~210 ms after
   (docs/decisions/bench-method.md has the throughput figures).
2. Sends. Every message sent reads ``Queue.attributes`` (for ``ContentBasedDeduplication`` alone), which
   computes every attribute, the three approximate counts included: three scans of the queue per
   message, so filling a queue is quadratic in its depth (10,000 messages sent into one queue took about
   60 s). While a send runs, its thread sees a ``Queue.attributes`` holding just that setting, computed
   exactly as the full property does; every other caller (GetQueueAttributes, other threads) the full one.
3. Receives and acknowledgements, O(batch) instead of O(depth) (moto 5.2.5's SQS). Draining a backlog was
   quadratic: each message received or acknowledged cost a scan (or nine) of the whole queue:

   a. Its retention check, run for every message received, read the queue's ``MessageRetentionPeriod`` through
      ``get_queue_attributes``, which computes ``Queue.attributes`` three times, each with the three approximate
      counts: nine scans of the queue per message received. The patch reads the queue's
      ``message_retention_period`` (the attribute that setting is stored in) directly, and compares it with the
      message's age as the original does, with the SQS module's clock.
   b. ``Queue.messages`` built the list of every visible, undelayed message of the queue before a receive took
      its first ten. It is now a view (``_Ready``) over the queue's messages as they were when it was read, whose
      iteration tests each message only when it is reached, so a receive stops after its batch; its length and
      truth (the approximate count, the long poll's wake-up test) are what the list's were.
   c. ``Queue.delete_message`` (every acknowledgement) tested every message of the queue for the receipt handle
      (building each one's list of handles) and rebuilt the list in Python; ``change_message_visibility`` (every
      modifyAckDeadline and nack) scanned the same way. A message in flight under its current handle is now
      found among the messages in flight (the receipt handles are random, one message has a given one) and
      taken out of the list by identity at C speed; any other handle (an earlier receive's, a message no longer
      in flight, an invalid one) takes moto's own path, with its answers and errors.

   Measured (docs/decisions/moto-receive-cost.md, ``python -m bench.drain``): draining 5,000 1-KiB messages
   through ``make run`` with REST pull (100 a pull) and ack took 31.7 s of the stack's CPU before, 2.85 s after
   (10,000: 5.9 s, linear).
4. The server's module list. moto's server rescans its package directory on every request
   (``host in list_of_moto_modules()``, ~1.5 ms of CPU a request) and logs every request; the list
   never changes, so it is computed once, and only errors are logged.

The patches replace private functions of moto 5.2.5 (``MOTO_VERSION``); on any other moto they refuse to
apply (local/moto_version.py).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from chalicelib.local import moto_version

MOTO_VERSION = "5.2.5"  # the release every patch below was written for and checked against


@functools.cache
def speed_up_moto() -> bool:
    """Apply the patches in this process (once: later calls return at once); returns whether they are in place.
    RuntimeError, before any patch, on a moto other than ``MOTO_VERSION``."""
    moto_version.require(MOTO_VERSION, "chalicelib/local/moto_speedups.py")
    _patch_sqs_clock()
    _patch_sqs_sends()
    _patch_sqs_receives()
    _cache_module_list()
    return True


def _patch_sqs_clock() -> None:
    import moto.sqs.models as sqs_models
    from moto.core import utils

    original = utils.unix_time

    def unix_time(dt: datetime.datetime | None = None) -> float:
        return time.time() if dt is None else original(dt)

    def unix_time_millis(dt: datetime.datetime | None = None) -> float:
        return unix_time(dt) * 1000.0

    module: Any = sqs_models
    module.unix_time = unix_time
    module.unix_time_millis = unix_time_millis


_sending = threading.local()


def _patch_sqs_sends() -> None:
    import moto.sqs.models as sqs_models

    queue_class: Any = sqs_models.Queue
    backend_class: Any = sqs_models.SQSBackend
    full = queue_class.attributes

    def attributes(self: Any) -> dict[str, Any]:
        if not getattr(_sending, "active", False):
            return dict(full.fget(self))
        if not self.fifo_queue:
            return {}
        value = self.content_based_deduplication
        return {"ContentBasedDeduplication": str(value).lower() if isinstance(value, bool) else value}

    def marking(method: Any, active: bool) -> Any:
        @functools.wraps(method)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            outer = getattr(_sending, "active", False)
            _sending.active = active
            try:
                return method(*args, **kwargs)
            finally:
                _sending.active = outer

        return wrapped

    def sending(method: Any) -> Any:
        return marking(method, True)

    queue_class.attributes = property(attributes)
    backend_class.send_message = sending(backend_class.send_message)
    backend_class.send_message_batch = sending(backend_class.send_message_batch)
    # A send to a queue with an enabled event source mapping receives from it inside the send (moto's stand-in for
    # Lambda's poller), and that receive reads the queue's full attributes.
    backend_class.receive_message = marking(backend_class.receive_message, False)


class _Ready:
    """What moto's ``Queue.messages`` answers (the queue's visible, undelayed messages), as a view over the queue's
    messages when it was read: iterating tests each message only when reached (a receive stops after its batch),
    ``len`` and truth count and test them as the list did."""

    __slots__ = ("_messages",)

    def __init__(self, messages: list[Any]) -> None:
        self._messages = tuple(messages)  # a copy, as the list was: deletes, purges and sends change the queue's

    def __iter__(self) -> Iterator[Any]:
        return (m for m in self._messages if m.visible and not m.delayed)

    def __bool__(self) -> bool:
        return any(True for _ in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _patch_sqs_receives() -> None:
    import moto.sqs.models

    sqs_models: Any = moto.sqs.models  # its clock looked up per call: the speed-up above and the tests replace it
    queue_class: Any = sqs_models.Queue
    backend_class: Any = sqs_models.SQSBackend

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        # moto: get_queue_attributes(queue_name, ["MessageRetentionPeriod"])["MessageRetentionPeriod"]
        retention_period = self.get_queue(queue_name).message_retention_period
        return bool(retention_period + message.sent_timestamp / 1000 > sqs_models.unix_time())

    def messages(self: Any) -> _Ready:
        return _Ready(self._messages)

    def held_under(queue: Any, receipt_handle: str) -> Any:
        """The message in flight whose current receipt handle this is, if it is still in the queue; else None."""
        held = next((m for m in queue._pending_messages.copy() if m.receipt_handle == receipt_handle), None)
        return held if held is not None and held in queue._messages else None  # `in`: by identity (no __eq__)

    delete_message = queue_class.delete_message  # moto's, under the queue's lock where moto_fixes applied

    def delete_held_message(self: Any, receipt_handle: str) -> None:
        with self._messages_lock:  # a reentrant lock: moto_fixes' delete takes it too
            if receipt_handle not in self.deleted_messages:
                held = held_under(self, receipt_handle)
                messages = self._messages.copy()  # in one step: a receive may move a message to its dead-letter queue
                at = -1
                with contextlib.suppress(ValueError):  # ... this one, meanwhile
                    at = messages.index(held) if held is not None else -1  # by identity, at C speed
                if at >= 0:  # what moto's scan does for this handle, without the scan
                    self.pending_messages.discard(held)
                    self.deleted_messages.update(held.all_receipt_handles)
                    del messages[at]
                    self._messages = messages  # a new list, as moto's rebuild
                    return
            delete_message(self, receipt_handle)

    change_message_visibility = backend_class.change_message_visibility

    def change_held_visibility(self: Any, queue_name: str, receipt_handle: str, visibility_timeout: int) -> None:
        queue = self.get_queue(queue_name)
        message = held_under(queue, receipt_handle)
        if message is None:
            change_message_visibility(self, queue_name, receipt_handle, visibility_timeout)
            return
        # moto's loop body, for the message its scan would find
        visibility_timeout_msec = int(visibility_timeout) * 1000
        given_visibility_timeout = sqs_models.unix_time_millis() + visibility_timeout_msec
        if given_visibility_timeout - message.sent_timestamp > 43200 * 1000:
            raise sqs_models.InvalidParameterValue(
                f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: Total "
                "VisibilityTimeout for the message is beyond the limit [43200 seconds]")
        message.change_visibility(visibility_timeout)
        if message.visible and message in queue.pending_messages:
            queue.pending_messages.remove(message)

    backend_class.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period
    queue_class.messages = property(messages)
    queue_class.delete_message = delete_held_message
    backend_class.change_message_visibility = change_held_visibility


def _cache_module_list() -> None:
    from moto import backends

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
    modules = tuple(backends.list_of_moto_modules())

    def cached() -> tuple[str, ...]:
        return modules

    module: Any = backends
    module.list_of_moto_modules = cached
