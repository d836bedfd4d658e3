"""Local stand-in for the scheduled maintenance Lambda: calls a handler on an interval."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("metro.schedule")


class Schedule:
    def __init__(self, handler: Callable[[dict[str, Any], Any], Any], interval: float,
                 name: str = "maintenance") -> None:
        self._handler = handler
        self._name = name
        self._interval = interval
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._handler({"source": "aws.events", "detail-type": "Scheduled Event"}, None)
            except Exception:
                log.exception("%s run failed", self._name)

    def start(self) -> None:
        threading.Thread(target=self.run, name=f"metro-{self._name}", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
