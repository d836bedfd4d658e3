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
3. The server's module list. moto's server rescans its package directory on every request
   (``host in list_of_moto_modules()``, ~1.5 ms of CPU a request) and logs every request; the list
   never changes, so it is computed once, and only errors are logged.

The patches replace private functions of moto 5.2.5 (``MOTO_VERSION``); on any other moto they refuse to
apply (local/moto_version.py).
"""

from __future__ import annotations

import datetime
import functools
import logging
import threading
import time
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


def _cache_module_list() -> None:
    from moto import backends

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
    modules = tuple(backends.list_of_moto_modules())

    def cached() -> tuple[str, ...]:
        return modules

    module: Any = backends
    module.list_of_moto_modules = cached
