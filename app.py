"""Metro's Chalice app: routes and event handlers only; everything else lives in chalicelib/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalice.app import Chalice, Rate, Request, Response

from chalicelib import config
from chalicelib.api import front_door, registry, routes
from chalicelib.api.http import CONTENT_TYPES, in_google_envelope
from chalicelib.delivery import event_handlers
from chalicelib.observability import catalog, logs
from chalicelib.observability.handlers import (
    api_request,
    fanout_ids,
    ingest_ids,
    observed,
    push_ids,
    schedule_ids,
    seek_ids,
)

app = Chalice(app_name="metro")
app.api.binary_types = []  # bodies are JSON; keep them as text
logs.configure()  # JSON lines deployed, text locally (METRO_LOG_FORMAT); redacted either way


def _request() -> Request:
    request = app.current_request
    assert request is not None
    return request


_ALL = ["GET", "PUT", "PATCH", "DELETE", "POST"]


@app.middleware("http")
def observe(request: Request, get_response: Callable[[Request], Response]) -> Response:
    """The API Gateway request id on every log line of the call; the metrics flushed after it."""
    with api_request((request.context or {}).get("requestId"), getattr(request, "lambda_context", None)):
        return get_response(request)


@app.middleware("http")
def google_errors(request: Request, get_response: Callable[[Request], Response]) -> Response:
    """Chalice's own refusals (media type, method) in Google's error envelope too (api/http.py)."""
    return in_google_envelope(get_response(request))


def _view(route: str) -> Callable[..., Response]:
    def view(**params: str) -> Response:
        return routes.dispatch(_request(), route, params)
    return view


# Every route template of the method registry (api/registry.py), each answering every HTTP method it may
# (a public route only GET; the others all, so that an unknown method answers Google's 404 envelope).
for _route in registry.ROUTES:
    if registry.is_public(_route):
        app.route(_route, name=registry.view_name(_route), methods=["GET"])(_view(_route))
    else:
        app.route(_route, name=registry.view_name(_route), methods=_ALL, content_types=CONTENT_TYPES)(_view(_route))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The API function's entry point behind any front door: an HTTP API's or function URL's payload 2.0 event
    through the shim (api/front_door.py), a REST API's event to ``app`` as it is."""
    return front_door.serve(app, event, context)


@app.schedule(Rate(1, unit=Rate.MINUTES), name="maintenance")  # the dead-letter sweep; idle expiry hourly
@observed(schedule_ids, heartbeat=catalog.MAINTENANCE_HEARTBEAT)
def maintenance(event: Any) -> dict[str, Any]:
    return event_handlers.maintenance(event.to_dict(), event.context)


# The messages table's stream drives fan-out (ReportBatchItemFailures is set by infra/).
@app.on_dynamodb_record(stream_arn=config.messages_stream_arn(),
                        batch_size=100, starting_position="TRIM_HORIZON", name="fanout")
@observed(fanout_ids)
def fanout(event: Any) -> dict[str, Any]:
    return event_handlers.fanout(event.to_dict(), event.context)


# Fed by one event source mapping per push subscription queue, which Metro manages (store/mappings.py).
@app.lambda_function(name="push")
@observed(push_ids)
def push(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return event_handlers.push(event, context)


# A large seek's background fill, invoked asynchronously by the seek call, by itself and by maintenance.
@app.lambda_function(name="seek_worker")
@observed(seek_ids)
def seek_worker(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return event_handlers.seek_worker(event, context)


# Import topics: fed by the Kinesis and MSK event source mappings Metro manages (chalicelib/store/ingest_mappings.py)
@app.lambda_function(name="ingest")
@observed(ingest_ids)
def ingest(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return event_handlers.ingest(event, context)


# An export subscription's queue -> files in S3 (docs/export.md), fed by an event source mapping per export
# subscription that Metro manages (chalicelib/store/mappings.py)
@app.lambda_function(name="export")
@observed(push_ids)  # the same SQS event shape: message ids and queue
def export(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return event_handlers.export(event, context)


# The message transforms' JavaScript, in the one function that carries V8 (infra/v8_layer.py), invoked by the
# functions that publish and deliver (chalicelib/store/transformer.py). Its role writes its logs and nothing else.
@app.lambda_function(name="transform")
def transform(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return event_handlers.transform(event, context)
