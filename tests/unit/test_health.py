"""``/v1/status`` checks its stores (service/health.py): one probe each, the answer kept a few seconds on the
injected clock; a failed probe makes the status unhealthy and names the store (core/wire/responses.py)."""

from __future__ import annotations

import threading
import types
from typing import cast

from chalicelib.core.wire.responses import ServiceStatus
from chalicelib.service.context import Context
from chalicelib.service.health import STATUS_CACHE_SECONDS, HealthService
from chalicelib.store.workers import Workers

NAMES = ("resources table", "messages table", "leases table", "bucket", "queues")


class Probes:
    def __init__(self) -> None:
        self.failing: set[str] = set()
        self.calls: list[str] = []
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    names = NAMES

    def probe(self, name: str) -> bool:
        with self.lock:
            self.calls.append(name)
            self.threads.add(threading.current_thread().name)
        return name not in self.failing


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def health() -> tuple[HealthService, Probes, Clock]:
    probes, clock = Probes(), Clock()
    ctx = types.SimpleNamespace(probes=probes, clock=clock, workers=Workers())
    return HealthService(cast(Context, ctx)), probes, clock


def test_every_store_is_probed_once_and_the_answer_is_kept() -> None:
    service, probes, clock = health()
    assert service.status() == ServiceStatus()
    assert sorted(probes.calls) == sorted(NAMES)
    probes.failing.add("messages table")
    clock.now += STATUS_CACHE_SECONDS - 0.1
    assert service.status().healthy and len(probes.calls) == len(NAMES)  # polled again: no new reads
    clock.now += 0.2
    assert service.status() == ServiceStatus(("messages table",))
    assert len(probes.calls) == 2 * len(NAMES)


def test_the_probes_run_side_by_side_on_the_context_workers() -> None:
    service, probes, _ = health()
    service.status()
    assert all(name.startswith("metro-store") for name in probes.threads)


def test_an_unhealthy_status_names_the_failing_stores_in_ams_shape() -> None:
    service, probes, _ = health()
    probes.failing |= {"bucket", "leases table"}
    status = service.status()
    assert not status.healthy and status.failing == ("leases table", "bucket")
    assert status.to_wire() == {"status": "unhealthy", "push_functionality": "enabled", "push_servers": []}
    assert "leases table, bucket" in status.problem
    assert ServiceStatus().to_wire() == {"status": "ok", "push_functionality": "enabled", "push_servers": []}
