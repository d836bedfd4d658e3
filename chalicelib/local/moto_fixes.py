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
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def fix_moto() -> bool:
    """Apply the fixes in this process (once); returns whether they are in place."""
    _release_expired_before_receive()
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
