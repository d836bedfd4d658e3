"""Metro's Chalice app: routes and event handlers only; everything else lives in chalicelib/."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from chalice.app import Chalice, Rate, Request, Response

from chalicelib import config
from chalicelib.api import jwks, openapi_page, routes
from chalicelib.api import permissions as paths
from chalicelib.api.http import CONTENT_TYPES, in_google_envelope
from chalicelib.delivery import handlers

app = Chalice(app_name="metro")
app.log.setLevel(config.log_level())  # Chalice sets its "metro" logger to ERROR: Metro's warnings would vanish
app.api.binary_types = []  # bodies are JSON; keep them as text


def _request() -> Request:
    request = app.current_request
    assert request is not None
    return request


_ALL = ["GET", "PUT", "PATCH", "DELETE", "POST"]


@app.middleware("http")
def google_errors(request: Request, get_response: Callable[[Request], Response]) -> Response:
    """Chalice's own refusals (media type, method) in Google's error envelope too (api/http.py)."""
    return in_google_envelope(get_response(request))


@app.route(paths.ROOT, methods=["GET"])
def index() -> Response:
    return routes.root()


@app.route(paths.PROJECT, methods=_ALL, content_types=CONTENT_TYPES)
def project(project: str) -> Response:
    return routes.project(_request(), project)


@app.route(paths.TOPICS, methods=_ALL, content_types=CONTENT_TYPES)
def list_topics(project: str) -> Response:
    return routes.list_resources(_request(), project, "topics")


@app.route(paths.TOPIC, methods=_ALL, content_types=CONTENT_TYPES)
def topic(project: str, topic: str) -> Response:
    return routes.topic(_request(), project, topic)


@app.route(paths.TOPIC_SUBSCRIPTIONS, methods=_ALL, content_types=CONTENT_TYPES)
def topic_subscriptions(project: str, topic: str) -> Response:
    return routes.topic_subscriptions(_request(), project, topic)


@app.route(paths.SUBSCRIPTIONS, methods=_ALL, content_types=CONTENT_TYPES)
def list_subscriptions(project: str) -> Response:
    return routes.list_resources(_request(), project, "subscriptions")


@app.route(paths.SUBSCRIPTION, methods=_ALL, content_types=CONTENT_TYPES)
def subscription(project: str, subscription: str) -> Response:
    return routes.subscription(_request(), project, subscription)


@app.route(paths.SNAPSHOTS, methods=_ALL, content_types=CONTENT_TYPES)
def list_snapshots(project: str) -> Response:
    return routes.list_resources(_request(), project, "snapshots")


@app.route(paths.SNAPSHOT, methods=_ALL, content_types=CONTENT_TYPES)
def snapshot(project: str, snapshot: str) -> Response:
    return routes.snapshot(_request(), project, snapshot)


@app.route(paths.TOPIC_SNAPSHOTS, methods=_ALL, content_types=CONTENT_TYPES)
def topic_snapshots(project: str, topic: str) -> Response:
    return routes.topic_snapshots(_request(), project, topic)


# --- schemas ---
@app.route(paths.SCHEMAS, methods=_ALL, content_types=CONTENT_TYPES)
def schemas(project: str) -> Response:
    return routes.schemas(_request(), project)


@app.route(paths.SCHEMA, methods=_ALL, content_types=CONTENT_TYPES)
def schema(project: str, schema: str) -> Response:
    return routes.schema(_request(), project, schema)


@app.route(paths.PROJECT_COLLECTION_VERB, methods=_ALL, content_types=CONTENT_TYPES)
def project_collection_verb(project: str, collection: str) -> Response:
    return routes.collection_verb(_request(), project, collection)


# --- identity: AMS's projects, project members and users ---
@app.route(paths.PROJECTS, methods=_ALL, content_types=CONTENT_TYPES)
def projects() -> Response:
    return routes.projects(_request())


@app.route(paths.MEMBERS, methods=_ALL, content_types=CONTENT_TYPES)
def members(project: str) -> Response:
    return routes.members(_request(), project)


@app.route(paths.MEMBER, methods=_ALL, content_types=CONTENT_TYPES)
def member(project: str, user: str) -> Response:
    return routes.member(_request(), project, user)


@app.route(paths.USERS, methods=_ALL, content_types=CONTENT_TYPES)
def users() -> Response:
    return routes.users(_request())


@app.route(paths.USER, methods=_ALL, content_types=CONTENT_TYPES)
def user(user: str) -> Response:
    return routes.user(_request(), user)


# --- AMS's operational routes ---
@app.route(paths.STATUS, methods=_ALL, content_types=CONTENT_TYPES)
def status() -> Response:
    return routes.operation(_request(), paths.STATUS)


@app.route(paths.VERSION, methods=_ALL, content_types=CONTENT_TYPES)
def version() -> Response:
    return routes.operation(_request(), paths.VERSION)


@app.route(paths.SERVICE_METRICS, methods=_ALL, content_types=CONTENT_TYPES)
def service_metrics() -> Response:
    return routes.operation(_request(), paths.SERVICE_METRICS)


@app.schedule(Rate(1, unit=Rate.MINUTES), name="maintenance")  # the dead-letter sweep; idle expiry hourly
def maintenance(event: Any) -> dict[str, Any]:
    return handlers.maintenance(event.to_dict(), event.context)


# The messages table's stream drives fan-out (ReportBatchItemFailures is set by infra/).
@app.on_dynamodb_record(stream_arn=os.environ.get("METRO_MESSAGES_STREAM_ARN", "arn:aws:dynamodb:local"),
                        batch_size=100, starting_position="TRIM_HORIZON", name="fanout")
def fanout(event: Any) -> dict[str, Any]:
    return handlers.fanout(event.to_dict(), event.context)


# --- push delivery: the keys that verify push tokens, and the push handler ---
@app.route(paths.JWKS, methods=["GET"])
def push_jwks() -> Response:
    return jwks.jwks()


@app.route(paths.JWKS_WELL_KNOWN, methods=["GET"])
def push_jwks_well_known() -> Response:
    return jwks.jwks()


# --- the API's OpenAPI description and its HTML page (api/openapi.py) ---
@app.route(paths.OPENAPI, methods=["GET"])
def openapi_json() -> Response:
    return openapi_page.spec()


@app.route(paths.DOCS, methods=["GET"])
def openapi_docs() -> Response:
    return openapi_page.docs()


# Fed by one event source mapping per push subscription queue, which Metro manages (store/mappings.py).
@app.lambda_function(name="push")
def push(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handlers.push(event, context)


# A large seek's background fill, invoked asynchronously by the seek call, by itself and by maintenance.
@app.lambda_function(name="seek_worker")
def seek_worker(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handlers.seek_worker(event, context)
