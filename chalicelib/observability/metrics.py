"""Metro's CloudWatch metrics in the embedded metric format (Powertools Metrics): lines on stdout that CloudWatch
Logs turns into metrics, no PutMetricData call.

Every metric is in the ``Metro`` namespace with the dimension ``service=metro`` (catalog.py names them). They are
collected in the process and written by :func:`flush`, which the invocation wrapper (observability/handlers.py) and
the API middleware of app.py call after every invocation. With METRO_METRICS_RESOURCE_DIMENSIONS the message counts
are also written per topic or subscription, at once (one line each): each distinct resource is one more custom
metric per name (docs/operations.md has the cost).

Recording and flushing never raise: a metric that cannot be written is a warning line, never a failed request.
Off (METRO_METRICS, off locally by default) nothing is recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Iterable, Iterator

from aws_lambda_powertools.metrics import Metrics, MetricUnit, single_metric

from chalicelib import config
from chalicelib.core import timefmt
from chalicelib.core.errors import MetroError
from chalicelib.observability import catalog

log = logging.getLogger(__name__)
_METRICS = Metrics(namespace=catalog.NAMESPACE, service=catalog.SERVICE)
SECONDS, MILLISECONDS, PERCENT = MetricUnit.Seconds, MetricUnit.Milliseconds, MetricUnit.Percent
_LOCK = threading.Lock()  # push records its POSTs' times from the scheduler's threads


@functools.cache
def _settings() -> tuple[bool, bool]:
    """(enabled, per-resource dimensions), read once per process."""
    try:
        return config.metrics_enabled(), config.metrics_resource_dimensions()
    except ValueError:
        log.warning("metrics are off: their settings could not be read", exc_info=True)
        return False, False


def reset() -> None:
    """Read the settings again and drop what is pending (tests)."""
    _settings.cache_clear()
    with _LOCK:
        _METRICS.clear_metrics()


def add(name: str, value: float, unit: MetricUnit = MetricUnit.Count, *, topic: str = "",
        subscription: str = "") -> None:
    """Record one value of ``name``; with per-resource dimensions on, also ``name`` for the topic or subscription."""
    enabled, per_resource = _settings()
    if not enabled:
        return
    try:
        with _LOCK:
            _METRICS.add_metric(name=name, unit=unit, value=value)
        if per_resource and (topic or subscription):
            with single_metric(name=name, unit=unit, value=value, namespace=catalog.NAMESPACE,
                               default_dimensions={catalog.SERVICE_DIMENSION: catalog.SERVICE}) as metric:
                if topic:
                    metric.add_dimension(name=catalog.TOPIC_DIMENSION, value=topic)
                if subscription:
                    metric.add_dimension(name=catalog.SUBSCRIPTION_DIMENSION, value=subscription)
    except Exception:
        log.warning("metric %s not recorded", name, exc_info=True)


def elapsed(name: str, started: float) -> None:
    """Record the milliseconds since ``started`` (a ``time.perf_counter()`` reading) as ``name``."""
    add(name, (time.perf_counter() - started) * 1000, MetricUnit.Milliseconds)


def oldest_age(publish_times: Iterable[str], now: float, subscription: str) -> None:
    """Record how long the oldest of the messages a delivery hands out has waited since its publish (RFC 3339)."""
    try:
        oldest = min((timefmt.parse_timestamp(t, "publish_time") for t in publish_times), default=None)
    except MetroError:
        return
    if oldest is not None:
        add(catalog.OLDEST_UNACKED_AGE, max(0.0, now - oldest), SECONDS, subscription=subscription)


def flush() -> None:
    """Write what was recorded since the last flush (nothing when nothing was)."""
    with _LOCK:
        try:
            if _METRICS.metric_set:
                _METRICS.flush_metrics()
        except Exception:
            log.warning("metrics not written", exc_info=True)
            _METRICS.clear_metrics()


def server_error(exc: BaseException) -> bool:
    """A failure of Metro's, not of the request: anything but a Metro error below 500."""
    return not isinstance(exc, MetroError) or exc.http_code >= 500


@dataclasses.dataclass
class Tally:
    messages: int = 0  # what the call carried: messages published, delivered, acknowledged


@contextlib.contextmanager
def operation(name: str, *, topic: str = "", subscription: str = "") -> Iterator[Tally]:
    """One API use case: ``{name}Requests``, ``{name}Latency``, ``{name}Errors`` (server-side failures) and
    ``{name}Messages`` (what the body sets on the tally)."""
    tally, started = Tally(), time.perf_counter()
    try:
        yield tally
    except BaseException as exc:
        if server_error(exc):
            add(catalog.errors(name), 1)
        raise
    finally:
        add(catalog.requests(name), 1)
        elapsed(catalog.latency(name), started)
        if tally.messages:
            add(catalog.messages(name), tally.messages, topic=topic, subscription=subscription)
