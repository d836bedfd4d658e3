"""Local stand-in for Lambda's asynchronous invocations (store/invoker.py): runs each queued event through the
handler of the function it names, one at a time, as Lambda would run the event (a failed run is logged; the
maintenance schedule resumes a seek whose worker failed, as deployed)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

Pending = queue.Queue[tuple[str, dict[str, Any]]]

log = logging.getLogger("metro.invoke")
Handler = Callable[[dict[str, Any], Any], Any]


class InvokePump:
    def __init__(self, pending: Callable[[], Pending], handlers: Mapping[str, Handler]) -> None:
        """``pending``: the current services' queue of invocations (they are rebuilt when settings change)."""
        self._pending = pending
        self._handlers = handlers
        self._stop = threading.Event()

    def run_once(self, timeout: float = 0.2) -> bool:
        """Run one queued invocation; False when none came within ``timeout``."""
        try:
            function, event = self._pending().get(timeout=timeout)
        except queue.Empty:
            return False
        handler = self._handlers.get(function.rsplit("-", 1)[-1])
        if handler is None:
            log.warning("no local handler for %s", function)
            return True
        try:
            handler(event, None)
        except Exception:
            log.exception("asynchronous invocation of %s failed", function)
        return True

    def run(self) -> None:
        while not self._stop.is_set():
            self.run_once()

    def start(self) -> None:
        threading.Thread(target=self.run, name="metro-invoke", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
