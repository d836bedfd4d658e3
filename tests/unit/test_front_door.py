"""The payload 2.0 shim (chalicelib/api/front_door.py): for every route and method of the registry, the REST event
chalice.local builds for a request and the shim's event from the HTTP API's 2.0 event of the same request reach the
same view with the same parameters, query, headers and body."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from chalice.app import Request, Response
from chalice.local import LambdaEventConverter, RouteMatcher

import app as app_module
from chalicelib.api import front_door, registry, routes

# URL parameter values with the characters a REST client percent-encodes or keeps: %, +, ~, a colon verb
VALUES = ("my-project", "a%2Fb", "plus+sign", "tilde~x", "caf%C3%A9")


def _path(route: str, value: str, suffix: str = "") -> str:
    return re.sub(r"\{\w+\}", value, route) + suffix


def _v2_event(method: str, path: str, query: str = "", body: str | None = None, base64_body: bool = False,
              headers: dict[str, str] | None = None, cookies: list[str] | None = None) -> dict[str, Any]:
    """An HTTP API's payload 2.0 event, in the shape of AWS's sample (a ``$default`` route and stage)."""
    event: dict[str, Any] = {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": {"content-type": "application/json", **(headers or {})},
        "requestContext": {"accountId": "123456789012", "apiId": "abc123", "domainName": "abc123.example",
                           "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                                    "sourceIp": "203.0.113.9", "userAgent": "test"},
                           "requestId": "req-1", "routeKey": "$default", "stage": "$default"},
        "isBase64Encoded": base64_body,
    }
    if query:
        event["queryStringParameters"] = {"joined": "as,commas"}  # never read: repeats are lost in it
    if body is not None:
        event["body"] = body
    if cookies:
        event["cookies"] = cookies
    return event


def _local_event(method: str, path: str, query: str = "", body: bytes | None = None) -> dict[str, Any]:
    converter = LambdaEventConverter(RouteMatcher(list(app_module.app.routes)))
    return converter.create_lambda_event(method, path + (f"?{query}" if query else ""),
                                         {"content-type": "application/json"}, body)


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, str], Any, str, Any]]:
    """What each request reached: the route, its URL parameters, its query, its method and its body."""
    seen: list[tuple[str, dict[str, str], Any, str, Any]] = []

    def record(request: Request, route: str, params: dict[str, str]) -> Response:
        query = {k: request.query_params.getlist(k) for k in request.query_params or {}}
        seen.append((route, dict(params), query, request.method, request.raw_body))
        return Response(body={}, status_code=200)

    monkeypatch.setattr(routes, "dispatch", record)
    return seen


CASES = [(route, method) for route, methods in registry.ROUTES.items() for method in methods]


@pytest.mark.parametrize(("route", "method"), CASES, ids=[f"{m} {r}" for r, m in CASES])
def test_every_route_and_method_dispatches_like_the_rest_event(route: str, method: str, dispatched: list[Any]) -> None:
    for value in VALUES:
        for suffix in ("", "/"):
            path = _path(route, value, suffix if route != "/" else "")
            app_module.app(_local_event(method, path, "a=1&b=&a=2"), None)
            app_module.handler(_v2_event(method, path, "a=1&b=&a=2"), None)
            rest, shim = dispatched[-2:]
            assert shim == rest
            assert shim[0] == route


def test_verbs_stay_in_their_segment(dispatched: list[Any]) -> None:
    app_module.handler(_v2_event("POST", "/v1/projects/p/topics/t%2Bx:publish", body='{"messages":[]}'), None)
    route, params, _, method, body = dispatched[-1]
    assert (route, params, method, body) == ("/v1/projects/{project}/topics/{topic}",
                                             {"project": "p", "topic": "t%2Bx:publish"}, "POST", b'{"messages":[]}')


def test_a_base64_body_arrives_decoded(dispatched: list[Any]) -> None:
    encoded = base64.b64encode(b'{"ackIds":["x"]}').decode()
    app_module.handler(_v2_event("POST", "/v1/projects/p/subscriptions/s:acknowledge", body=encoded,
                                 base64_body=True), None)
    assert dispatched[-1][4] == b'{"ackIds":["x"]}'


def test_the_rest_context_carries_what_routes_and_logs_read() -> None:
    event = front_door.rest_event(_v2_event("GET", "/v1/projects/p/topics", cookies=["a=1", "b=2"]),
                                  "/v1/projects/{project}/topics", {"project": "p"})
    context = event["requestContext"]
    assert (context["requestId"], context["path"], context["httpMethod"]) == ("req-1", "/v1/projects/p/topics", "GET")
    assert context["identity"] == {"sourceIp": "203.0.113.9"}
    assert event["headers"]["cookie"] == "a=1; b=2"
    assert event["multiValueQueryStringParameters"] is None


def test_the_ams_api_is_known_by_its_id(monkeypatch: pytest.MonkeyPatch) -> None:
    event = _v2_event("GET", "/v1/projects/p/topics")
    route, params = "/v1/projects/{project}/topics", {"project": "p"}
    assert front_door.rest_event(event, route, params)["stageVariables"] == {}
    monkeypatch.setenv("METRO_AMS_API_ID", "abc123")
    assert front_door.rest_event(event, route, params)["stageVariables"] == {"dialect": "ams"}
    monkeypatch.setenv("METRO_AMS_API_ID", "other")
    assert front_door.rest_event(event, route, params)["stageVariables"] == {}


def test_an_unknown_path_answers_googles_not_found() -> None:
    answer = app_module.handler(_v2_event("GET", "/v2/nothing/here"), None)
    assert answer["statusCode"] == 404
    assert '"status": "NOT_FOUND"' in answer["body"] and "GET /v2/nothing/here" in answer["body"]
    assert "multiValueHeaders" not in answer


def test_repeated_headers_and_cookies_of_the_answer_fold_into_a_2_0_response() -> None:
    answer = front_door.response_v2({"statusCode": 200, "body": "", "headers": {"a": "1"},
                                     "multiValueHeaders": {"Vary": ["x", "y"], "Set-Cookie": ["c=1", "d=2"]}})
    assert answer == {"statusCode": 200, "body": "", "headers": {"a": "1", "Vary": "x, y"}, "cookies": ["c=1", "d=2"]}


def test_a_rest_event_passes_unchanged(dispatched: list[Any]) -> None:
    app_module.handler(_local_event("GET", "/v1/projects/p/topics"), None)
    assert dispatched[-1][:2] == ("/v1/projects/{project}/topics", {"project": "p"})
