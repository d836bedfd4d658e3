"""Schema request bodies and query parameters (Google's REST shapes, both JSON dialects) -> typed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.schemas.model import (
    SchemaSpec,
    ValidateMessageRequest,
    View,
    parse_encoding,
    parse_schema_name,
    parse_type,
    parse_view,
    split_revision,
)
from chalicelib.core.timefmt import parse_timestamp
from chalicelib.core.wire.messages import decode_data

_SCHEMA_FIELDS = {"name", "type", "definition", "revisionId", "revision_id", "revisionCreateTime",
                  "revision_create_time"}


@dataclass(frozen=True)
class SchemaRef:
    """A schema named by a URL: ``schemas/{id}`` or ``schemas/{id}@{revision}``."""

    name: Name
    revision_id: str = ""


def schema_ref(project: str, resource_id: str) -> SchemaRef:
    schema_id, revision_id = split_revision(resource_id)
    return SchemaRef(names.make(project, "schemas", schema_id), revision_id)


def _object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgument(f"Invalid JSON payload received: {what} must be a JSON object")
    return body


def _only(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise InvalidArgument(f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}": Cannot find field.')


def _string(body: Mapping[str, Any], camel: str, snake: str) -> str:
    value = body.get(camel, body.get(snake))
    if value is None:  # absent, or null: proto3 JSON reads null as the default
        return ""
    if not isinstance(value, str):
        raise InvalidArgument(f"Invalid value at '{snake}' (TYPE_STRING)")
    return value


def schema_spec(body: Any) -> SchemaSpec:
    """A Schema message: its type and definition (output-only fields are read and ignored)."""
    fields = _object(body, "schema")
    _only(fields, _SCHEMA_FIELDS)
    _string(fields, "name", "name")
    _string(fields, "revisionId", "revision_id")
    created = _string(fields, "revisionCreateTime", "revision_create_time")
    if created:
        parse_timestamp(created, "revision_create_time")
    schema_type = parse_type(fields.get("type"))
    return SchemaSpec(schema_type, _string(fields, "definition", "definition"))


def create_request(body: Any, params: Mapping[str, str], project: str) -> tuple[Name, SchemaSpec]:
    """``POST projects/{p}/schemas?schemaId=``: the new schema's name and its first revision."""
    schema_id = params.get("schemaId", params.get("schema_id", ""))
    if not schema_id:
        raise InvalidArgument("schema_id is required")
    return names.make(project, "schemas", schema_id), schema_spec(body)


def wrapped_schema(body: Any) -> SchemaSpec:
    """``{"schema": {...}}`` of :commit and schemas:validate (a ``name`` or ``parent`` string in it is ignored, as
    Google does: the URL names the schema)."""
    fields = _object(body, "request")
    _only(fields, {"schema", "name", "parent"})
    _string(fields, "name", "name")
    _string(fields, "parent", "parent")
    return schema_spec(fields.get("schema") or {})


def rollback_request(body: Any) -> str:
    """``:rollback``'s ``{"revisionId": ...}``."""
    fields = _object(body, "request")
    _only(fields, {"revisionId", "revision_id", "name"})
    return _required_revision(_string(fields, "revisionId", "revision_id"))


def delete_revision_request(params: Mapping[str, str]) -> str:
    """``:deleteRevision?revisionId=``."""
    return _required_revision(params.get("revisionId", params.get("revision_id", "")))


def _required_revision(value: str) -> str:
    if not value:
        raise InvalidArgument("revision_id is required")
    return value


def view(params: Mapping[str, str], default: View) -> View:
    return parse_view(params.get("view"), default)


def validate_message_request(body: Any) -> ValidateMessageRequest:
    """``schemas:validateMessage``: the message (base64), its encoding, and a schema by name or inline."""
    fields = _object(body, "request")
    _only(fields, {"name", "schema", "message", "encoding", "parent"})
    message = decode_data(fields.get("message", ""))
    encoding = parse_encoding(fields.get("encoding"))
    if fields.get("schema"):
        return ValidateMessageRequest(message, encoding, spec=schema_spec(fields["schema"]))
    name = _string(fields, "name", "name")
    if not name:
        raise InvalidArgument("Either name or schema must be set")
    schema, revision = parse_schema_name(name)
    return ValidateMessageRequest(message, encoding, schema=schema, revision_id=revision)
