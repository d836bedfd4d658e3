"""Dispatch: a Chalice request -> (resource name, method, verb) -> its handler (api/handlers.py) -> JSON.

``{id}:{verb}`` arrives as one path segment; an unknown (method, verb) answers 404 as Google does.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from chalice.app import Request, Response

from chalicelib.api import handlers
from chalicelib.api.handlers import CollectionHandler, Handler, Incoming
from chalicelib.api.http import guarded, json_response, not_found, parse_body, split_segment
from chalicelib.core import names

_WITH_BODY = ("PUT", "POST", "PATCH")


def _incoming(request: Request) -> Incoming:
    body = parse_body(request.raw_body) if request.method in _WITH_BODY else {}
    return Incoming(body, dict(request.query_params or {}))


def _not_found(request: Request) -> Response:
    return not_found(request.method, request.context.get("path", ""))


def _dispatch(request: Request, table: Mapping[tuple[str, str], Handler], project: str, collection: str,
              segment: str) -> Response:
    def run() -> Response:
        resource_id, verb = split_segment(segment)
        handler = table.get((request.method, verb))
        if handler is None:
            return _not_found(request)
        name = names.make(unquote(project), collection, resource_id)
        incoming = _incoming(request)
        return json_response(handler(name, incoming), incoming.params)

    return guarded(run)


def topic(request: Request, project: str, segment: str) -> Response:
    return _dispatch(request, handlers.TOPIC, project, "topics", segment)


def topic_subscriptions(request: Request, project: str, segment: str) -> Response:
    return _dispatch(request, handlers.TOPIC_SUBSCRIPTIONS, project, "topics", segment)


def subscription(request: Request, project: str, segment: str) -> Response:
    return _dispatch(request, handlers.SUBSCRIPTION, project, "subscriptions", segment)


def _run_on_project(request: Request, handler: CollectionHandler | None, project: str) -> Response:
    def run() -> Response:
        if handler is None:
            return _not_found(request)
        incoming = _incoming(request)
        return json_response(handler(project, incoming), incoming.params)

    return guarded(run)


def list_resources(request: Request, project: str, collection: str) -> Response:
    """``GET /v1/projects/{p}/topics`` and ``.../subscriptions``; Google answers 404 for other methods."""
    handler = handlers.COLLECTION[collection] if request.method == "GET" else None
    return _run_on_project(request, handler, unquote(project))


def project(request: Request, segment: str) -> Response:
    """``GET /v1/projects/{p}:metrics`` (the only verb on a project)."""
    project_id, verb = split_segment(segment)
    return _run_on_project(request, handlers.PROJECT.get((request.method, verb)), project_id)


def root() -> Response:
    return Response(body="Ok", status_code=200, headers={"Content-Type": "text/plain"})
