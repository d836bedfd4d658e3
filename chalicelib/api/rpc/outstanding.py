"""What each open StreamingPull has handed out and not yet settled: the flow control of a stream
(``max_outstanding_messages``, ``max_outstanding_bytes``) counts these. A message is settled by an ack or a
nack (a deadline of 0), sent on the stream or, as google-cloud-pubsub does, by a unary Acknowledge or
ModifyAckDeadline on the same server: both report here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class StreamLeases:
    """One stream's outstanding messages (ack id -> bytes) and the limits it was opened with (0: none)."""

    def __init__(self, max_messages: int, max_bytes: int) -> None:
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._held: dict[str, int] = {}
        self._changed = threading.Condition()

    def room(self) -> int:
        """How many more messages the stream may receive now (at most 1,000, one pull's worth)."""
        with self._changed:
            if self.max_bytes and sum(self._held.values()) >= self.max_bytes:
                return 0
            if not self.max_messages:
                return 1000
            return max(0, min(1000, self.max_messages - len(self._held)))

    def hold(self, ack_id: str, size: int) -> None:
        with self._changed:
            self._held[ack_id] = size

    def settle(self, ack_ids: Iterable[str]) -> bool:
        """Forget settled messages; whether any was this stream's."""
        with self._changed:
            found = [a for a in ack_ids if self._held.pop(a, None) is not None]
            if found:
                self._changed.notify_all()
            return bool(found)

    def wait_for_room(self, timeout: float) -> None:
        with self._changed:
            self._changed.wait(timeout)

    def wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def __len__(self) -> int:
        with self._changed:
            return len(self._held)


class Outstanding:
    """Every open stream's leases, so that a unary settlement frees room on the stream that handed it out."""

    def __init__(self) -> None:
        self._streams: set[StreamLeases] = set()
        self._lock = threading.Lock()

    def open(self, leases: StreamLeases) -> None:
        with self._lock:
            self._streams.add(leases)

    def close(self, leases: StreamLeases) -> None:
        with self._lock:
            self._streams.discard(leases)

    def settle(self, ack_ids: Iterable[str]) -> None:
        ids = list(ack_ids)
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.settle(ids)

    def __len__(self) -> int:
        with self._lock:
            return len(self._streams)
