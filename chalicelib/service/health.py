"""``GET /v1/status``: whether Metro can use its stores, one cheap read of each (store/health.py), run side by
side on the context's workers. The answer is kept ``STATUS_CACHE_SECONDS``: the route is polled, and a poll
must cost no more than a handful of reads every few seconds however often it comes."""

from __future__ import annotations

import threading

from chalicelib.core.wire.responses import ServiceStatus
from chalicelib.service.context import Context

STATUS_CACHE_SECONDS = 5.0


class HealthService:
    def __init__(self, ctx: Context, ttl: float = STATUS_CACHE_SECONDS) -> None:
        self.ctx = ctx
        self.ttl = ttl
        self._lock = threading.Lock()  # one probe round at a time; polls that arrive meanwhile get its answer
        self._kept: tuple[float, ServiceStatus] | None = None

    def status(self) -> ServiceStatus:
        with self._lock:
            now = self.ctx.clock()
            if self._kept is not None and now < self._kept[0]:
                return self._kept[1]
            probes = self.ctx.probes
            results = self.ctx.workers.map(probes.probe, probes.names)
            status = ServiceStatus(tuple(name for name, ok in zip(probes.names, results) if not ok))
            self._kept = (now + self.ttl, status)
            return status
