"""A fix to moto's SQS, applied wherever Metro starts moto's server in its own process (``make run``, the
end-to-end tests' stack, the benchmarks): correctness, not speed, so it is always on.

moto's ``Queue.delete_message`` rebuilds the queue's message list without the queue's lock, while requests run
on concurrent server threads. Two deletes at once each write back a list built before the other's, so a
message one of them deleted comes back (an acknowledged message is delivered again), and a message sent
meanwhile (``add_message`` appends under the lock) is dropped from the list (an acknowledged publish is
lost). `make race` found the first: messages acknowledged within their deadline delivered again with
their receive count one higher. The fix runs ``delete_message`` under the lock ``add_message`` takes.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def fix_moto() -> bool:
    """Apply the fix in this process (once); returns whether it is in place."""
    from moto.sqs.models import Queue

    unlocked = Queue.delete_message

    def delete_message(self: Any, receipt_handle: str) -> None:
        with self._messages_lock:
            unlocked(self, receipt_handle)

    Queue.delete_message = delete_message  # type: ignore[method-assign]
    return True
