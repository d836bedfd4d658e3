"""The service's health as ``GET /v1/status`` reports it: AMS's shape, and which stores failed their probe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServiceStatus:
    failing: tuple[str, ...] = ()  # the stores that failed their probe (store/health.py), by name

    @property
    def healthy(self) -> bool:
        return not self.failing

    @property
    def problem(self) -> str:
        return f"Metro cannot use its storage: {', '.join(self.failing)} failed a probe (see the service's log)."

    def to_wire(self) -> dict[str, Any]:
        """AMS's answer: Metro has no push servers to report, push runs as Lambda functions fed by the queues."""
        return {"status": "ok" if self.healthy else "unhealthy", "push_functionality": "enabled",
                "push_servers": []}
