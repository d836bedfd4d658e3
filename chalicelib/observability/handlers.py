"""The wrapper of every Lambda entry point in app.py: the invocation's ids on each log line, the metrics flushed at
its end (whatever happens), and a heartbeat metric for the runs that ended well.

Correlation ids, where the event has a natural one: the API Gateway request id of an API call (app.py's middleware,
:func:`api_request`), the publish request ids of a fan-out batch (the stream records' ``rid``), the SQS message ids
of a push batch (and its queue: the subscription's), the seek id of a seek chunk, the EventBridge event id of a
maintenance run. At most ten ids are listed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from chalicelib.observability import logs, metrics

MAX_IDS = 10
F = TypeVar("F", bound=Callable[..., Any])
Correlate = Callable[[Mapping[str, Any]], dict[str, Any]]


def _joined(ids: list[str]) -> str:
    return ",".join(ids[:MAX_IDS]) + (f",+{len(ids) - MAX_IDS}" if len(ids) > MAX_IDS else "")


def _records(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    records = event.get("Records")
    return [r for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []


def fanout_ids(event: Mapping[str, Any]) -> dict[str, Any]:
    rids = [str(r.get("dynamodb", {}).get("NewImage", {}).get("rid", {}).get("S", "")) for r in _records(event)]
    return {"correlation_id": _joined([r for r in rids if r])}


def push_ids(event: Mapping[str, Any]) -> dict[str, Any]:
    records = _records(event)
    queues = sorted({str(r.get("eventSourceARN", "")).rpartition(":")[2] for r in records} - {""})
    return {"correlation_id": _joined([str(r.get("messageId", "")) for r in records if r.get("messageId")]),
            "queue": ",".join(queues)}


def seek_ids(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"correlation_id": str(event.get("seekId", "")), "subscription": str(event.get("subscription", ""))}


def schedule_ids(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"correlation_id": str(event.get("id", ""))}


def ingest_ids(event: Mapping[str, Any]) -> dict[str, Any]:
    """A Kinesis batch's record ids (shard:sequence), or an MSK batch's cluster."""
    ids = [str(r.get("eventID", "")) for r in _records(event) if r.get("eventID")]
    return {"correlation_id": _joined(ids) if ids else str(event.get("eventSourceArn", ""))}


class _Cold:
    start = True


def _cold_start() -> bool:
    cold, _Cold.start = _Cold.start, False
    return cold


def observed(correlate: Correlate, heartbeat: str = "") -> Callable[[F], F]:
    """Wrap a Lambda entry point of app.py: a raw ``(event, context)`` handler, or Chalice's event object (with
    ``to_dict()`` and ``context``)."""
    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(event: Any, *args: Any, **kwargs: Any) -> Any:
            context = args[0] if args else getattr(event, "context", None)
            raw = event.to_dict() if hasattr(event, "to_dict") else event
            keys = {**logs.lambda_keys(context), **_safe(correlate, raw), "cold_start": _cold_start()}
            try:
                with logs.bound(**keys):
                    result = handler(event, *args, **kwargs)
                if heartbeat:
                    metrics.add(heartbeat, 1)
                return result
            finally:
                metrics.flush()
        return run  # type: ignore[return-value]
    return wrap


def _safe(correlate: Correlate, raw: Any) -> dict[str, Any]:
    """The event's ids; an event of an unexpected shape has none (it must not fail the invocation)."""
    try:
        return correlate(raw) if isinstance(raw, Mapping) else {}
    except Exception:
        return {}


@contextlib.contextmanager
def api_request(request_id: str | None, context: Any) -> Iterator[None]:
    """One API call (app.py's http middleware): its API Gateway request id as the correlation id (the Lambda request
    id where there is none: Chalice's local server), the metrics flushed after the response."""
    try:
        keys = logs.lambda_keys(context)
        with logs.bound(**keys, correlation_id=request_id or keys.get("function_request_id"), cold_start=_cold_start()):
            yield
    finally:
        metrics.flush()
