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

from chalicelib.api import (
    account_handlers,
    ams_handlers,
    ams_schemas,
    handlers,
    operations,
    permissions,
    schema_handlers,
    snapshot_handlers,
)
from chalicelib.api.auth import authenticate, authorize
from chalicelib.api.dialect import Dialect, dialect_of
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.http import (
    ams_error_response,
    error_response,
    guarded,
    json_response,
    not_found,
    parse_body,
    split_segment,
)
from chalicelib.api.schema_requests import schema_ref
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


def _handler(dialect: Dialect, route: str, table: Table[T], method: str, verb: str) -> Callable[[T, Incoming], Result]:
    """The endpoint's dialect first: AMS's handler where its shapes differ, else the one both dialects share."""
    handler = table.get((method, verb))
    if dialect is Dialect.AMS and handler is not None:
        return ams_handlers.OVERRIDES.get((route, method, verb), handler)  # type: ignore[no-any-return]
    return handler  # type: ignore[return-value]


def _serve(request: Request, route: str, table: Table[T], target: Callable[[str], T], *, project: str = "",
           segment: str = "") -> Response:
    """Decide the dialect, authenticate, find the handler, authorize it from the permission table, then run it."""
    dialect = dialect_of(request.stage_vars)

    def run() -> Response:
        principal = authenticate(request)
        resource_id, verb = split_segment(segment)
        if route == permissions.USER and resource_id == _PROFILE and not verb and request.method == "GET":
            verb = _PROFILE
        handler = _handler(dialect, route, table, request.method, verb)
        if handler is None:
            return not_found(request.method, request.context.get("path", ""))
        authorize(principal, permissions.rule_for(route, request.method, verb), project, resource_id)
        incoming = _incoming(request, principal)
        return json_response(handler(target(resource_id), incoming), incoming.params)

    return guarded(run, ams_error_response if dialect is Dialect.AMS else error_response)


def _named(project: str, collection: str) -> Callable[[str], names.Name]:
    return lambda resource_id: names.make(project, collection, resource_id)


def _same(value: str) -> Callable[[str], str]:
    return lambda _: value


def _project(project: str) -> Callable[[str], str]:
    """The project of the URL, once authorized: INVALID_ARGUMENT unless it is a valid project id."""
    return lambda _: names.check_project(project)


# -- Google's resources -----------------------------------------------------------------------------
_TOPIC = {**handlers.TOPIC, **ams_schemas.TOPIC_VERBS}


def topic(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.TOPIC, _TOPIC, _named(project, "topics"), project=project,
                  segment=segment)


def topic_subscriptions(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.TOPIC_SUBSCRIPTIONS, handlers.TOPIC_SUBSCRIPTIONS, _named(project, "topics"),
                  project=project, segment=segment)


_SUBSCRIPTION = {**handlers.SUBSCRIPTION, **ams_handlers.SUBSCRIPTION_VERBS}


def subscription(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.SUBSCRIPTION, _SUBSCRIPTION, _named(project, "subscriptions"),
                  project=project, segment=segment)


def snapshot(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.SNAPSHOT, snapshot_handlers.SNAPSHOT, _named(project, "snapshots"),
                  project=project, segment=segment)


def topic_snapshots(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.TOPIC_SNAPSHOTS, snapshot_handlers.TOPIC_SNAPSHOTS, _named(project, "topics"),
                  project=project, segment=segment)


_LISTS = {"topics": (permissions.TOPICS, {("GET", ""): handlers.COLLECTION["topics"]}),
          "subscriptions": (permissions.SUBSCRIPTIONS, {("GET", ""): handlers.COLLECTION["subscriptions"]}),
          "snapshots": (permissions.SNAPSHOTS, snapshot_handlers.SNAPSHOTS)}


def list_resources(request: Request, project: str, collection: str) -> Response:
    """``GET /v1/projects/{p}/topics`` and ``.../subscriptions``; Google answers 404 for other methods."""
    route, table = _LISTS[collection]
    project = unquote(project)
    return _serve(request, route, table, _project(project), project=project)


# -- schemas ------------------------------------------------------------------------------------------
def schemas(request: Request, project: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.SCHEMAS, schema_handlers.SCHEMAS, _same(project), project=project)


_SCHEMA = {**schema_handlers.SCHEMA, **ams_schemas.SCHEMA_VERBS}


def schema(request: Request, project: str, segment: str) -> Response:
    project = unquote(project)
    return _serve(request, permissions.SCHEMA, _SCHEMA, lambda rid: schema_ref(project, rid),
                  project=project, segment=segment)


def collection_verb(request: Request, project: str, segment: str) -> Response:
    """``projects/{p}/schemas:validate`` and ``:validateMessage``; any other segment here is Google's 404."""
    project = unquote(project)
    if split_segment(segment)[0] != "schemas":
        return not_found(request.method, request.context.get("path", ""))
    return _serve(request, permissions.PROJECT_COLLECTION_VERB, schema_handlers.SCHEMAS_VERBS, _same(project),
                  project=project, segment=segment)


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


# -- operations (AMS) -------------------------------------------------------------------------------
_OPERATIONS = {permissions.STATUS: operations.STATUS, permissions.VERSION: operations.VERSION,
               permissions.SERVICE_METRICS: operations.METRICS}


def operation(request: Request, route: str) -> Response:
    """``/v1/status``, ``/v1/version``, ``/v1/metrics``."""
    return _serve(request, route, _OPERATIONS[route], _same(""))


# Every dispatched route's handler table, by route template (api/permissions.py holds each route's rules).
TABLES: Mapping[str, Mapping[tuple[str, str], object]] = {
    permissions.PROJECTS: account_handlers.PROJECTS,
    permissions.PROJECT: account_handlers.PROJECT,
    permissions.TOPICS: _LISTS["topics"][1],
    permissions.TOPIC: _TOPIC,
    permissions.TOPIC_SUBSCRIPTIONS: handlers.TOPIC_SUBSCRIPTIONS,
    permissions.SUBSCRIPTIONS: _LISTS["subscriptions"][1],
    permissions.SUBSCRIPTION: _SUBSCRIPTION,
    permissions.SNAPSHOTS: _LISTS["snapshots"][1],
    permissions.SNAPSHOT: snapshot_handlers.SNAPSHOT,
    permissions.TOPIC_SNAPSHOTS: snapshot_handlers.TOPIC_SNAPSHOTS,
    permissions.MEMBERS: account_handlers.MEMBERS,
    permissions.MEMBER: account_handlers.MEMBER,
    permissions.USERS: account_handlers.USERS,
    permissions.USER: account_handlers.USER,
    **_OPERATIONS,
    permissions.SCHEMAS: schema_handlers.SCHEMAS,
    permissions.SCHEMA: _SCHEMA,
    permissions.PROJECT_COLLECTION_VERB: schema_handlers.SCHEMAS_VERBS,
}


def root() -> Response:
    return Response(body="Ok", status_code=200, headers={"Content-Type": "text/plain"})
