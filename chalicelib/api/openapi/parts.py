"""The building blocks of Metro's OpenAPI description (api/openapi/description.py): the helpers component schemas are
written with (api/openapi/components.py and the modules that describe one area each:
api/openapi/schema_registry.py, api/openapi/replay.py)."""

from __future__ import annotations

from typing import Any

from chalicelib.core import names

REF = "#/components/schemas/{model}"
Schema = dict[str, Any]


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
_PROJECT, _RESOURCE = names.PROJECT_PATTERN, names.ID_PATTERN
PROJECT_ID: Schema = {"type": "string", "pattern": f"^{_PROJECT}$"}
RESOURCE_ID: Schema = {"type": "string", "pattern": f"^{_RESOURCE}$", "not": {"pattern": "^[Gg][Oo][Oo][Gg]"}}


def resource_name(collection: str) -> Schema:
    """A full name in a request body, ``projects/{p}/{collection}/{id}``, as core/names.py's parse reads it."""
    return {"type": "string", "pattern": f"^projects/{_PROJECT}/{collection}/{_RESOURCE}$"}
