"""The loop the queue pumps share: refresh the pollers (one per subscription) every ``refresh`` seconds on the
pump's own thread until stopped, then stop every poller."""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)


class RefreshingPump:
    name = "metro-pump"  # the thread's name, and the pump's in log lines
    stopped: threading.Event
    refresh: float
    pollers: dict[str, Any]  # each with a ``stop`` event

    def refresh_once(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.refresh_once()
            except Exception:
                log.exception("%s refresh failed; retrying", self.name)
            self.stopped.wait(self.refresh)
        for poller in self.pollers.values():
            poller.stop.set()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.stopped.set()
