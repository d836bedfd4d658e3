"""The building blocks of Metro's OpenAPI description (api/openapi.py): the ``Op`` row that describes one
operation, and the helpers component schemas are written with (api/openapi_schemas.py and the modules that
describe one area each: api/openapi_schema_registry.py, api/openapi_replay.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.api import permissions as p

REF = "#/components/schemas/{model}"
Schema = dict[str, Any]


@dataclass(frozen=True)
class Op:
    route: str  # a route template of api/permissions.py
    method: str
    verb: str  # the word after the colon, "" for none
    summary: str
    answer: str = "Empty"  # component schema of the 200 answer
    body: str | None = None  # component schema of the JSON request body
    query: tuple[str, ...] = ()  # keys of the description's query parameters (openapi.QUERY)
    tag: str = "AMS"
    path: str = ""  # only where the URL is not the route followed by ":verb" (GET /v1/users/profile)
    content: str = "application/json"  # media type of the 200 answer
    required: tuple[str, ...] = ()  # the query parameters among ``query`` a request must carry

    @property
    def url(self) -> str:
        return self.path or (f"{self.route}:{self.verb}" if self.verb else self.route)

    @property
    def public(self) -> bool:
        rule = p.rule_for(self.route, self.method, self.verb)
        return rule is not None and rule.action.value == "public"


def ref(name: str) -> Schema:
    return {"$ref": REF.format(model=name)}


def obj(properties: Schema, required: tuple[str, ...] = (), closed: bool = False) -> Schema:
    out: Schema = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return out


def nullable_fields(schema: Schema) -> Schema:
    """A request body whose fields may each be null: proto3 JSON reads null as the field's default."""
    if "properties" not in schema:
        return schema
    props = {k: {"anyOf": [v, {"type": "null"}]} for k, v in schema["properties"].items()}
    return {**schema, "properties": props}


def array(items: Schema, **bounds: int) -> Schema:
    return {"type": "array", "items": items, **bounds}


PAGE = ("pageSize", "pageToken")  # the query parameters of a list call
STRING: Schema = {"type": "string"}
STRINGS = array(STRING)
STRING_MAP: Schema = {"type": "object", "additionalProperties": STRING}
TIMESTAMP: Schema = {"type": "string", "description": "RFC 3339, e.g. 2026-01-02T03:04:05.678Z"}
# Ids as core/names.py checks them (a topic, subscription, snapshot or schema id may not start with "goog").
_PROJECT, _RESOURCE = r"[A-Za-z0-9][A-Za-z0-9\-_.:]{0,99}", r"[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}"
PROJECT_ID: Schema = {"type": "string", "pattern": f"^{_PROJECT}$"}
RESOURCE_ID: Schema = {"type": "string", "pattern": f"^{_RESOURCE}$", "not": {"pattern": "^[Gg][Oo][Oo][Gg]"}}


def resource_name(collection: str) -> Schema:
    """A full name in a request body, ``projects/{p}/{collection}/{id}``, as core/names.py's parse reads it."""
    return {"type": "string", "pattern": f"^projects/{_PROJECT}/{collection}/{_RESOURCE}$"}
