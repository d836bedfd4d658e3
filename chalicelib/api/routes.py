"""Route handlers: map (method, path parameters, verb) to a service call and back to JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from chalice.app import Request, Response

from chalicelib.api import requests
from chalicelib.api.http import Wire, guarded, json_response, not_found, parse_body, split_segment
from chalicelib.core import names
from chalicelib.core.names import Name
from chalicelib.runtime import services
from chalicelib.service import push_config  # push delivery (issue 4)
from chalicelib.service.usage import UsageService  # usage metrics (issue 6)

Handler = Callable[[Name, Any, dict[str, str]], "dict[str, Any] | Wire"]


def _params(request: Request) -> dict[str, str]:
    return dict(request.query_params or {})


def _dispatch(request: Request, table: dict[tuple[str, str], Callable[[], Handler]], project: str,
              collection: str, segment: str) -> Response:
    def run() -> Response:
        resource_id, verb = split_segment(segment)
        handler = table.get((request.method, verb))
        if handler is None:
            return not_found(request.method, request.context.get("path", ""))
        name = names.make(unquote_project(project), collection, resource_id)
        body = parse_body(request.raw_body) if request.method in ("PUT", "POST", "PATCH") else {}
        params = _params(request)
        return json_response(handler()(name, body, params), params)

    return guarded(run)


def unquote_project(project: str) -> str:
    return unquote(project)


def topic(request: Request, project: str, segment: str) -> Response:
    s = services
    table: dict[tuple[str, str], Callable[[], Handler]] = {
        ("PUT", ""): lambda: lambda n, b, p: s().admin.create_topic(n, b),
        ("GET", ""): lambda: lambda n, b, p: s().admin.get_topic(n),
        ("PATCH", ""): lambda: lambda n, b, p: s().admin.patch_topic(n, b),
        ("DELETE", ""): lambda: lambda n, b, p: s().admin.delete_topic(n),
        ("POST", "publish"): lambda: lambda n, b, p: s().publish.publish(n, b),
        ("GET", "metrics"): lambda: lambda n, b, p: UsageService(s().ctx).topic_metrics(n),
    }
    return _dispatch(request, table, project, "topics", segment)


def topic_subscriptions(request: Request, project: str, segment: str) -> Response:
    table: dict[tuple[str, str], Callable[[], Handler]] = {
        ("GET", ""): lambda: lambda n, b, p: services().admin.topic_subscription_names(n, p),
    }
    return _dispatch(request, table, project, "topics", segment)


def subscription(request: Request, project: str, segment: str) -> Response:
    s = services
    table: dict[tuple[str, str], Callable[[], Handler]] = {
        ("PUT", ""): lambda: lambda n, b, p: s().admin.create_subscription(n, b),
        ("GET", ""): lambda: lambda n, b, p: s().admin.get_subscription(n),
        ("PATCH", ""): lambda: lambda n, b, p: s().admin.patch_subscription(n, b),
        ("DELETE", ""): lambda: lambda n, b, p: s().admin.delete_subscription(n),
        ("POST", "pull"): lambda: lambda n, b, p: s().pull.pull(n, requests.pull_request(b)),
        ("POST", "acknowledge"): lambda: lambda n, b, p: s().pull.acknowledge(n, requests.acknowledge_request(b)),
        ("POST", "modifyAckDeadline"): lambda: lambda n, b, p: s().pull.modify_ack_deadline(
            n, requests.modify_ack_deadline_request(b)),
        ("POST", "modifyPushConfig"): lambda: lambda n, b, p: push_config.modify_push_config(s().admin, n, b),
        ("POST", "detach"): lambda: lambda n, b, p: s().admin.detach_subscription(n),
        ("GET", "metrics"): lambda: lambda n, b, p: UsageService(s().ctx).subscription_metrics(n),
    }
    return _dispatch(request, table, project, "subscriptions", segment)


def list_resources(request: Request, project: str, collection: str) -> Response:
    def run() -> Response:
        if request.method != "GET":  # collections are only listed; Google answers 404 for other verbs
            return not_found(request.method, request.context.get("path", ""))
        params = _params(request)
        admin = services().admin
        listing = admin.list_topics if collection == "topics" else admin.list_subscriptions
        return json_response(listing(unquote_project(project), params), params)

    return guarded(run)


def project(request: Request, segment: str) -> Response:
    """``GET /v1/projects/{p}:metrics`` (the only verb on a project)."""

    def run() -> Response:
        project_id, verb = split_segment(segment)
        if (request.method, verb) != ("GET", "metrics"):
            return not_found(request.method, request.context.get("path", ""))
        params = _params(request)
        return json_response(UsageService(services().ctx).project_metrics(project_id), params)

    return guarded(run)


def root() -> Response:
    return Response(body="Ok", status_code=200, headers={"Content-Type": "text/plain"})
