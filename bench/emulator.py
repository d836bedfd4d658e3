"""An optional speed-up of moto's SQS clock, applied in the benchmark process only (``--moto-speedup``).

moto's SQS scans the whole queue several times per message: ``Queue.messages`` (on every add, every
long-poll wake-up and every receive) and ``Queue.attributes`` (on every send and, via the retention
check, on every message received) test each stored message's ``visible``/``delayed``, and each test
calls ``moto.core.utils.unix_time_millis()``, which builds two datetimes and runs an ``import``
statement: about 10 us per message per scan. The cost of one message therefore grows with queue
depth, and throughput with a 200-message window was a quarter of that with a 50-message one: the
benchmark measured moto's datetime arithmetic, not the design.

The patch replaces the SQS module's ``unix_time``/``unix_time_millis`` with ``time.time()`` when no
datetime is passed, which returns the same value (seconds or milliseconds since the epoch). Queues
still scan in O(depth); each scan is ~30x cheaper. It applies to Metro and the baselines alike.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

_applied = False


def speed_up_moto() -> bool:
    """Patch moto.sqs.models' clock functions (idempotent); returns whether the patch is in place."""
    global _applied
    if _applied:
        return True
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
    _applied = True
    return True
