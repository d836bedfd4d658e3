"""Dispatch: a Chalice request -> (route, method, verb) -> authentication, the method's permission rule, then
its handler (both declared once, api/methods.py, and gathered in api/registry.py) -> JSON.

``{id}:{verb}`` arrives as one path segment; an unknown (method, verb) answers 404 as Google does. Every
request is authenticated first (401), then authorized from the permission table (403) before anything
about the resource is looked at, so a caller without access learns nothing of what exists (no 404
oracle), and only then parsed and served.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from chalice.app import Request, Response

from chalicelib.api import permissions as P
from chalicelib.api import registry
from chalicelib.api.account_requests import PROFILE
from chalicelib.api.ams import handlers as ams_handlers
from chalicelib.api.auth import authorize, credentials
from chalicelib.api.dialect import Dialect, dialect_of
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.http import (
    ams_error_response,
    error_response,
    guarded,
    json_response,
    parse_body,
    split_segment,
)
from chalicelib.api.schema_requests import schema_ref
from chalicelib.core import limits, names
from chalicelib.core.errors import InvalidArgument, NotFound
from chalicelib.runtime import acting_as, services

_WITH_BODY = ("PUT", "POST", "PATCH")


API_FUNCTION = "api_handler"  # the Lambda function (infra/names.FUNCTIONS) whose role the API's AWS calls use


@dataclass(frozen=True)
class Call:
    """One API call, whatever carried it (REST through Chalice, or the gRPC edge): the endpoint's dialect, the
    route template and its URL parameters, the HTTP method, the JSON body (read only once the call is authorized)
    and query parameters, the token."""

    dialect: Dialect
    route: str
    method: str
    params: Mapping[str, str]
    body: Callable[[], dict[str, Any]]
    query: Mapping[str, str]
    token: str
    path: str = ""  # for a 404's message


def _body(request: Request) -> dict[str, Any]:
    if request.method not in _WITH_BODY:
        return {}
    raw = request.raw_body
    limits.check_request_size(len(raw or b""), services().ctx.config.max_request_bytes)
    body = parse_body(raw)
    if not isinstance(body, dict):  # every request message of the API is a JSON object
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    return body


def _handler(dialect: Dialect, route: str, method: str, verb: str) -> Callable[[Any, Incoming], Result] | None:
    """The endpoint's dialect first: AMS's handler where its shapes differ, else the one both dialects share."""
    handler = registry.table(route).get((method, verb))
    if dialect is Dialect.AMS and handler is not None:
        return ams_handlers.AMS_SHAPES.get(handler, handler)  # type: ignore[no-any-return]
    return handler


def execute(call: Call) -> Result:
    """Authenticate, find the method, authorize it (before anything about the resource is read), then run it.
    Raises the error the call ends with (core/errors.py). Its AWS calls are the API function's (the gRPC edge's
    task role is a subset of it: infra/policies.grpc_edge_statements)."""
    with acting_as(API_FUNCTION):
        return _execute(call)


def _execute(call: Call) -> Result:
    spec = ROUTE_PARAMETERS[call.route]
    segment = call.params.get(spec.segment, "") if spec.segment else ""
    resource_id, verb = split_segment(segment)
    if spec.segment_prefix and resource_id != spec.segment_prefix:
        raise NotFound(f"The requested URL {call.method} {call.path} was not found on this server.")
    project = spec.project(call.params)
    access = services().access
    principal = access.authenticate("" if access.open else call.token)
    if call.route == P.USER and resource_id == PROFILE and not verb and call.method == "GET":
        verb = PROFILE
    handler = _handler(call.dialect, call.route, call.method, verb)
    if handler is None:
        raise NotFound(f"The requested URL {call.method} {call.path} was not found on this server.")
    authorize(principal, registry.rule_for(call.route, call.method, verb), project, resource_id)
    return handler(spec.target(project, resource_id), Incoming(call.body(), call.query, principal))


@dataclass(frozen=True)
class Route:
    """How a route template's URL parameters become what its handlers take: ``target(project, resource id)``,
    the parameter holding ``{id}:{verb}`` (``segment``), and the project the permission rule applies to."""

    target: Callable[[str, str], object]
    segment: str = ""  # the URL parameter that holds "{id}" or "{id}:{verb}"
    project: Callable[[Mapping[str, str]], str] = lambda params: unquote(params.get("project", ""))
    segment_prefix: str = ""  # only segments whose id is this are served here (else Google's 404)


def _named(collection: str) -> Callable[[str, str], object]:
    return lambda project, resource_id: names.make(project, collection, resource_id)


def _project(project: str, _: str) -> object:
    """The project of the URL, once authorized: INVALID_ARGUMENT unless it is a valid project id."""
    return names.check_project(project)


def _the_project(project: str, _: str) -> object:
    return project


def _nothing(project: str, _: str) -> object:
    return ""


def _member(project: str, user: str) -> object:
    return names.check_project(project), user


def _itself(project: str, resource_id: str) -> object:
    return resource_id


def _project_in_segment(params: Mapping[str, str]) -> str:
    return split_segment(params.get("project", ""))[0]


_NO_PROJECT: Callable[[Mapping[str, str]], str] = lambda params: ""  # noqa: E731
ROUTE_PARAMETERS: Mapping[str, Route] = {
    P.TOPICS: Route(_project),
    P.TOPIC: Route(_named("topics"), "topic"),
    P.TOPIC_SUBSCRIPTIONS: Route(_named("topics"), "topic"),
    P.TOPIC_SNAPSHOTS: Route(_named("topics"), "topic"),
    P.SUBSCRIPTIONS: Route(_project),
    P.SUBSCRIPTION: Route(_named("subscriptions"), "subscription"),
    P.SNAPSHOTS: Route(_project),
    P.SNAPSHOT: Route(_named("snapshots"), "snapshot"),
    P.SCHEMAS: Route(_the_project),
    P.SCHEMA: Route(schema_ref, "schema"),
    P.PROJECT_COLLECTION_VERB: Route(_the_project, "collection", segment_prefix="schemas"),
    P.PROJECTS: Route(_nothing, project=_NO_PROJECT),
    P.PROJECT: Route(_project, "project", project=_project_in_segment),
    P.MEMBERS: Route(_project),
    P.MEMBER: Route(_member, "user"),
    P.USERS: Route(_nothing, project=_NO_PROJECT),
    P.USER: Route(_itself, "user", project=_NO_PROJECT),
    P.STATUS: Route(_nothing, project=_NO_PROJECT),
    P.VERSION: Route(_nothing, project=_NO_PROJECT),
    P.SERVICE_METRICS: Route(_nothing, project=_NO_PROJECT),
    P.DECLARATION: Route(_nothing, project=_NO_PROJECT),
}


def _query(request: Request) -> dict[str, str]:
    """The query parameters; each may be given once (which of two values counts would be a guess)."""
    given = request.query_params
    if given is None:
        return {}
    for key in given:
        if len(given.getlist(key)) > 1:
            raise InvalidArgument(f"Invalid query parameter {key[:100]!r}: it may be given only once.")
    return dict(given)


def dispatch(request: Request, route: str, params: Mapping[str, str]) -> Response:
    """Serve a REST request of ``route`` (a template of api/permissions.py) with its URL parameters."""
    with acting_as(API_FUNCTION):
        return _dispatch(request, route, params)


def _dispatch(request: Request, route: str, params: Mapping[str, str]) -> Response:
    if registry.is_public(route):
        return registry.table(route)[(request.method, "")](request)  # type: ignore[no-any-return]
    dialect = dialect_of(request.stage_vars)

    def run() -> Response:
        query = _query(request)
        call = Call(dialect, route, request.method, params, lambda: _body(request), query,
                    credentials(request.headers or {}, query), request.context.get("path", ""))
        return json_response(execute(call), query)

    return guarded(run, ams_error_response if dialect is Dialect.AMS else error_response)
