"""Metro's OpenAPI 3.1 description, built from the declaration of every method (api/methods.py, gathered in
api/registry.py) and the component schemas of api/openapi/components.py; served at ``/openapi.json``, rendered
for people at ``/docs`` (api/openapi/page.py).

A ``{id}:{verb}`` call is one path segment (api/routes.py splits it), so its path in the description is the
route template followed by the literal verb, e.g. ``/v1/projects/{project}/topics/{topic}:publish``: a
concrete template that clients and fuzzers fill in like any other.

The Google endpoint is the one described. The AMS endpoint serves the same operations; where its answers
have AMS's shape (topics, subscriptions, pull, the schema reads: api/ams/handlers.py's ``AMS_SHAPES``), the
description does not follow it. Areas with many component schemas describe them in modules of their own
(api/openapi/schema_registry.py, api/openapi/replay.py), merged here.

A method's declaration names the component schema of its JSON body (``body=``) and of its 200 answer
(``answer=``, ``"Empty"`` by default) and its query parameters (``query=``, keys of ``QUERY``). A body or
answer of a new shape adds its schema to api/openapi/components.py (``_REQUESTS`` or ``_RESPONSES``), reusing
``ref(...)`` for the shapes it nests. A new path parameter name gets its schema in ``PATH_PARAMETERS``.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from chalicelib.api.methods import Method
from chalicelib.api.openapi.components import AREAS, components
from chalicelib.api.openapi.parts import PROJECT_ID, RESOURCE_ID, Schema, ref

TITLE = "Metro: Google Cloud Pub/Sub REST v1 and ARGO Messaging Service API"
VERSION = "v1"
# Errors every authenticated operation may answer (Google's envelope, api/http.py); 5xx are never expected.
ERRORS = ("400", "401", "403", "404", "409", "429")
PUBLIC_ERRORS = ("404",)


# Path parameters as core/names.py and api/account_requests.py check them; the examples name the resources
# `make fuzz` creates before it starts.
PATH_PARAMETERS: dict[str, Schema] = {
    "project": {**PROJECT_ID, "example": "fuzz-project"},
    "topic": {**RESOURCE_ID, "example": "fuzz-topic"},
    "subscription": {**RESOURCE_ID, "example": "fuzz-subscription"},
    "user": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._@+\-]{0,99}$", "example": "fuzz-user"},
    **{name: schema for area in AREAS for name, schema in area.PATH_PARAMETERS.items()},
}
QUERY: dict[str, Schema] = {
    "pageSize": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 0}],
                 "description": "0 or empty: the default; over 1000 reads as 1000"},
    "pageToken": {"type": "string"},
    "project": {"type": "string"},
    **{name: schema for area in AREAS for name, schema in area.QUERY.items()},
}
SECURITY_SCHEMES: Schema = {
    "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
    "bearer": {"type": "http", "scheme": "bearer"},
    "key": {"type": "apiKey", "in": "query", "name": "key"},
}
_TEXT: Schema = {"type": "string"}


def _responses(op: Method) -> Schema:
    schema = _TEXT if op.answer == "Text" else ref(op.answer)
    out: Schema = {"200": {"description": "OK", "content": {op.content: {"schema": schema}}}}
    for code in PUBLIC_ERRORS if op.public else ERRORS:
        out[code] = {"$ref": f"#/components/responses/Error{code}"}
    return out


def _operation(op: Method) -> Schema:
    out: Schema = {"operationId": operation_id(op), "summary": op.summary, "tags": [op.tag],
                   "responses": _responses(op)}
    names = re.findall(r"{(\w+)}", op.url)
    params = [{"name": n, "in": "path", "required": True, "schema": PATH_PARAMETERS[n]} for n in names]
    params += [{"name": q, "in": "query", "required": q in op.required, "schema": QUERY[q]} for q in op.query]
    if params:
        out["parameters"] = params
    if op.body:
        # An empty body reads as {} (protobuf JSON), so no body is required.
        out["requestBody"] = {"required": False, "content": {"application/json": {"schema": ref(op.body)}}}
    if op.public:
        out["security"] = []
    return out


def operation_id(op: Method) -> str:
    """``POST /v1/projects/{project}/topics/{topic}:publish`` -> ``post_projects_project_topics_topic_publish``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{op.http.lower()}{op.url.removeprefix('/v1')}").strip("_")


def _error_responses() -> Schema:
    return {f"Error{code}": {"description": "Google's error envelope",
                             "content": {"application/json": {"schema": ref("Error")}}}
            for code in ERRORS}


@functools.cache
def document(methods: tuple[Method, ...]) -> dict[str, Any]:
    """The description of ``methods`` (api/registry.METHODS: every method Metro serves)."""
    paths: dict[str, dict[str, Any]] = {}
    for op in methods:
        paths.setdefault(op.url, {})[op.http.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": VERSION,
                 "description": "Google Cloud Pub/Sub REST v1 and ARGO Messaging Service, served by Metro. "
                                "Errors come in Google's envelope {\"error\": {\"code\", \"message\", \"status\"}}."},
        "paths": paths,
        "components": {"schemas": components(), "responses": _error_responses(),
                       "securitySchemes": SECURITY_SCHEMES},
        "security": [{"apiKey": []}, {"bearer": []}, {"key": []}],
    }


@functools.cache
def document_json(methods: tuple[Method, ...]) -> str:
    return json.dumps(document(methods), separators=(",", ":"))
