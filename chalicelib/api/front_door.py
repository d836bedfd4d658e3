"""The front door of payload 2.0: API Gateway HTTP APIs and Lambda function URLs send a version 2.0 event, while
Chalice dispatches on the REST API's proxy event. :func:`serve` turns one into the other, finds the route
template itself (the 2.0 event of a ``$default`` route names none), and turns Chalice's answer into a 2.0
response. Events of another version (the REST API's) pass to the app unchanged.

The dialect of the endpoint: the AMS API is known by its id (``METRO_AMS_API_ID``), since an HTTP API's stage
variables are missing from the events some emulators build; the REST event gets ``dialect=ams`` from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from chalicelib import config
from chalicelib.api import registry
from chalicelib.api.dialect import STAGE_VARIABLE, Dialect
from chalicelib.api.http import not_found

Event = dict[str, Any]
LambdaApp = Callable[[Event, Any], Event]

_CAPTURE = re.compile(r"^\{(\w+)\}$")


def _segments(route: str) -> list[tuple[str, bool]]:
    """A route template's segments, each with whether it captures (``{name}``, a whole segment)."""
    return [(m.group(1), True) if (m := _CAPTURE.match(part)) else (part, False) for part in route.split("/")]


# Fewest captures first, then by template: a literal segment wins over a capture at the same place.
_TEMPLATES = sorted(((route, _segments(route)) for route in registry.ROUTES),
                    key=lambda item: (item[0].count("{"), item[0]))


def match(path: str) -> tuple[str, dict[str, str]] | None:
    """The route template ``path`` falls under and the segments it captures (as sent, still percent-encoded),
    or None. One trailing slash is ignored, as API Gateway does."""
    if path != "/" and path.endswith("/"):
        path = path[:-1]
    parts = path.split("/")
    for route, segments in _TEMPLATES:
        if len(segments) == len(parts) and all(capture or text == part
                                               for (text, capture), part in zip(segments, parts, strict=True)):
            return route, {text: part for (text, capture), part in zip(segments, parts, strict=True) if capture}
    return None


def _query(raw: str) -> dict[str, list[str]] | None:
    """Every value of every key, repeats kept (the 2.0 event's ``queryStringParameters`` joins them with commas,
    which would hide a repeated key the API refuses); None for no query, as the REST API sends."""
    return parse_qs(raw, keep_blank_values=True) or None


def _headers(event: Event) -> dict[str, str]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if event.get("cookies"):
        headers["cookie"] = "; ".join(event["cookies"])
    return headers


def _stage_variables(event: Event) -> dict[str, str]:
    stage_vars = dict(event.get("stageVariables") or {})
    ams_api = config.ams_api_id()
    if ams_api and event.get("requestContext", {}).get("apiId") == ams_api:
        stage_vars[STAGE_VARIABLE] = Dialect.AMS.value
    return stage_vars


def rest_event(event: Event, route: str, params: Mapping[str, str]) -> Event:
    """The REST API proxy event Chalice dispatches, from a 2.0 event whose path fell under ``route``."""
    context = event.get("requestContext", {})
    http = context.get("http", {})
    rest_context = {key: context[key] for key in ("requestId", "apiId", "stage", "domainName") if key in context}
    rest_context.update({"resourcePath": route, "httpMethod": http.get("method", "GET"),
                         "path": event.get("rawPath", "/"), "identity": {"sourceIp": http.get("sourceIp", "")}})
    return {
        "requestContext": rest_context,
        "headers": _headers(event),
        "pathParameters": dict(params),
        "multiValueQueryStringParameters": _query(event.get("rawQueryString", "")),
        "stageVariables": _stage_variables(event),
        "body": event.get("body"),
        "isBase64Encoded": bool(event.get("isBase64Encoded", False)),
    }


def response_v2(response: Event) -> Event:
    """Chalice's answer as a 2.0 response: repeated headers joined (2.0 has no ``multiValueHeaders``), cookies to
    set in ``cookies``."""
    out = {key: value for key, value in response.items() if key != "multiValueHeaders"}
    headers = dict(response.get("headers") or {})
    cookies: list[str] = []
    for name, values in (response.get("multiValueHeaders") or {}).items():
        if name.lower() == "set-cookie":
            cookies.extend(values)
        else:
            headers[name] = ", ".join(str(v) for v in values)
    out["headers"] = headers
    if cookies:
        out["cookies"] = cookies
    return out


def serve(app: LambdaApp, event: Event, context: Any) -> Event:
    """Answer a Lambda event of any front door: REST events as they are, 2.0 events through the shim."""
    if event.get("version") != "2.0":
        return app(event, context)
    path = event.get("rawPath", "/")
    found = match(path)
    if found is None:
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        return response_v2(not_found(method, path).to_dict())
    return response_v2(app(rest_event(event, *found), context))
