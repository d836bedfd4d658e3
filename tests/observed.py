"""What the observability tests share: Metro's loggers put back as they were, and the embedded-metric-format lines
of captured stdout read back as (metric name -> values, dimensions) per line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from chalicelib.observability import logs, metrics


@dataclass(frozen=True)
class Emf:
    """One EMF line: its namespace, dimensions and each metric's values."""

    namespace: str
    dimensions: dict[str, str]
    values: dict[str, list[float]]
    units: dict[str, str]


def emf_lines(text: str) -> list[Emf]:
    out = []
    for line in text.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        doc = json.loads(line)
        directive = doc["_aws"]["CloudWatchMetrics"][0]
        dims = {name: doc[name] for name in directive["Dimensions"][0]}
        names = [m["Name"] for m in directive["Metrics"]]
        values = {n: doc[n] if isinstance(doc[n], list) else [doc[n]] for n in names}
        out.append(Emf(directive["Namespace"], dims, values, {m["Name"]: m["Unit"] for m in directive["Metrics"]}))
    return out


def total(lines: list[Emf], name: str, **dimensions: str) -> float:
    """The sum of ``name``'s values over the lines whose dimensions are exactly ``dimensions``."""
    return sum(sum(line.values.get(name, [])) for line in lines if line.dimensions == dimensions)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Metro's loggers (and the root logger) exactly as they were, whatever ``logs.configure`` did meanwhile."""
    loggers = [logging.getLogger(n) for n in ("", *logs.METRO_LOGGERS)]
    saved = [(lg, list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    yield
    for lg, handlers, level, propagate in saved:
        lg.handlers, lg.propagate = handlers, propagate
        lg.setLevel(level)
    logs._State.formatter = logs._State.handler = None


@pytest.fixture
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """METRO_METRICS on (per-resource dimensions too) for the test, off again after it."""
    monkeypatch.setenv("METRO_METRICS", "1")
    monkeypatch.setenv("METRO_METRICS_RESOURCE_DIMENSIONS", "1")
    metrics.reset()
    yield
    monkeypatch.undo()
    metrics.reset()


def metro_dims() -> dict[str, Any]:
    return {"service": "metro"}
