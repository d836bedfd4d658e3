"""AMS's operational routes, on both endpoints: ``GET /v1/status``, ``GET /v1/version`` and the service-wide
``GET /v1/metrics``."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from importlib import metadata

from chalicelib.api.handlers import CollectionHandler, Incoming, Result
from chalicelib.runtime import services

RELEASE = "0.1.0"  # pyproject.toml's version


def status(_: str, incoming: Incoming) -> Result:
    """Metro has no push servers to report: push runs as Lambda functions fed by the subscriptions' queues."""
    return {"status": "ok", "push_functionality": "enabled", "push_servers": []}


def version(_: str, incoming: Incoming) -> Result:
    return {"release": RELEASE, "distro": "metro", "python": platform.python_version(),
            "chalice": metadata.version("chalice"), "os": platform.system().lower(), "architecture": platform.machine()}


def service_metrics(_: str, incoming: Incoming) -> Result:
    return services().ams.service_metrics()


STATUS: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): status}
VERSION: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): version}
METRICS: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): service_metrics}
