"""Dispatch: a Chalice request -> (route, method, verb) -> authentication, the route's permission rule
(api/permissions.py), then its handler (api/handlers.py, api/account_handlers.py) -> JSON.

``{id}:{verb}`` arrives as one path segment; an unknown (method, verb) answers 404 as Google does. Every
request is authenticated first (401), then authorized from the permission table (403) before anything
about the resource is looked at, so a caller without access learns nothing of what exists (no 404
oracle), and only then parsed and served.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import unquote

from chalice.app import Request, Response

from chalicelib.api import account_handlers, handlers, permissions
from chalicelib.api.auth import authenticate, authorize
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.http import guarded, json_response, not_found, parse_body, split_segment
from chalicelib.core import limits, names
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.identity import Principal
from chalicelib.runtime import services

T = TypeVar("T")
Table = Mapping[tuple[str, str], Callable[[T, Incoming], Result]]
_WITH_BODY = ("PUT", "POST", "PATCH")
_PROFILE = "profile"  # GET /v1/users/profile: the caller's own user


def _incoming(request: Request, principal: Principal) -> Incoming:
    body = {}
    if request.method in _WITH_BODY:
        raw = request.raw_body
        limits.check_request_size(len(raw or b""), services().ctx.config.max_request_bytes)
        body = parse_body(raw)
        if not isinstance(body, dict):  # every request message of the API is a JSON object
            raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    return Incoming(body, dict(request.query_params or {}), principal)


def _serve(request: Request, route: str, table: Table[T], target: Callable[[str], T], *, project: str = "",
           segment: str = "") -> Response:
    """Authenticate, find the handler, authorize it from the permission table, then run it."""
    def run() -> Response:
        principal = authenticate(request)
        resource_id, verb = split_segment(segment)
        if route == permissions.USER and resource_id == _PROFILE and not verb and request.method == "GET":
            verb = _PROFILE
        handler = table.get((request.method, verb))
        if handler is None:
            return not_found(request.method, request.context.get("path", ""))
        authorize(principal, permissions.rule_for(route, request.method, verb), project, resource_id)
        incoming = _incoming(request, principal)
        return json_response(handler(target(resource_id), incoming), incoming.params)

    return guarded(run)


def _named(project: str, collection: str) -> Callable[[str], names.Name]:
    return lambda resource_id: names.make(project, collection, resource_id)


def _same(value: str) -> Callable[[str], str]:
    return lambda _: value


def _project(project: str) -> Callable[[str], str]:
    """The project of the URL, once authorized: INVALID_ARGUMENT unless it is a valid project id."""
    return lambda _: names.check_project(project)


# -- Google's resources -----------------------------------------------------------------------------
def topic(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.TOPIC, handlers.TOPIC, _named(project, "topics"), project=project,
                  segment=segment)


def topic_subscriptions(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.TOPIC_SUBSCRIPTIONS, handlers.TOPIC_SUBSCRIPTIONS, _named(project, "topics"),
                  project=project, segment=segment)


def subscription(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.SUBSCRIPTION, handlers.SUBSCRIPTION, _named(project, "subscriptions"),
                  project=project, segment=segment)


_LISTS = {"topics": (permissions.TOPICS, {("GET", ""): handlers.COLLECTION["topics"]}),
          "subscriptions": (permissions.SUBSCRIPTIONS, {("GET", ""): handlers.COLLECTION["subscriptions"]})}


def list_resources(request: Request, project: str, collection: str) -> Response:
    """``GET /v1/projects/{p}/topics`` and ``.../subscriptions``; Google answers 404 for other methods."""
    route, table = _LISTS[collection]
    project = unquote(project)
    return _serve(request, route, table, _project(project), project=project)


# -- projects, members, users (AMS) -----------------------------------------------------------------
def project(request: Request, segment: str) -> Response:
    """``/v1/projects/{p}``: AMS's project CRUD, ``:metrics``, the push identities."""
    project_id, _ = split_segment(segment)
    return _serve(request, permissions.PROJECT, account_handlers.PROJECT, _project(project_id), project=project_id,
                  segment=segment)


def projects(request: Request) -> Response:
    return _serve(request, permissions.PROJECTS, account_handlers.PROJECTS, _same(""))


def members(request: Request, project: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.MEMBERS, account_handlers.MEMBERS, _project(project), project=project)


def member(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.MEMBER, account_handlers.MEMBER,
                  lambda user: (names.check_project(project), user), project=project, segment=segment)


def users(request: Request) -> Response:
    return _serve(request, permissions.USERS, account_handlers.USERS, _same(""))


def user(request: Request, segment: str) -> Response:
    return _serve(request, permissions.USER, account_handlers.USER, lambda name: name, segment=segment)


# Every dispatched route's handler table, by route template (api/permissions.py holds each route's rules).
TABLES: Mapping[str, Mapping[tuple[str, str], object]] = {
    permissions.PROJECTS: account_handlers.PROJECTS,
    permissions.PROJECT: account_handlers.PROJECT,
    permissions.TOPICS: _LISTS["topics"][1],
    permissions.TOPIC: handlers.TOPIC,
    permissions.TOPIC_SUBSCRIPTIONS: handlers.TOPIC_SUBSCRIPTIONS,
    permissions.SUBSCRIPTIONS: _LISTS["subscriptions"][1],
    permissions.SUBSCRIPTION: handlers.SUBSCRIPTION,
    permissions.MEMBERS: account_handlers.MEMBERS,
    permissions.MEMBER: account_handlers.MEMBER,
    permissions.USERS: account_handlers.USERS,
    permissions.USER: account_handlers.USER,
}


def root() -> Response:
    return Response(body="Ok", status_code=200, headers={"Content-Type": "text/plain"})
