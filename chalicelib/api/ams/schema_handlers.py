"""AMS's schema routes and topic schema attach/detach, on the schema service (service/schemas.py,
service/schema_topics.py). AMS names a schema's type in lower case (``json``, ``avro``) and carries its
definition as a JSON object; Metro stores the definition as text, so the two views are the same schema.

``POST/PUT .../schemas/{s}``, ``.../schemas/{s}:validate`` and the topic verbs answer on both endpoints (they
have no Google counterpart); ``GET .../schemas/{s}`` and ``GET .../schemas`` have AMS's shape on its endpoint.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from chalicelib.api import parsing
from chalicelib.api import permissions as P
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.methods import Method
from chalicelib.api.references import authorize_name
from chalicelib.api.schema_requests import SchemaRef
from chalicelib.core import names
from chalicelib.core.access.references import READ_SCHEMA
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.schemas.model import Encoding, SchemaRecord, SchemaSpec, SchemaType, ValidateMessageRequest
from chalicelib.core.wire import ams
from chalicelib.core.wire.models import SchemaSettings
from chalicelib.core.wire.responses import EMPTY
from chalicelib.runtime import services

_TYPES = {"json": SchemaType.JSON_SCHEMA, "avro": SchemaType.AVRO}
_NAMES = {SchemaType.JSON_SCHEMA: "json", SchemaType.AVRO: "avro", SchemaType.PROTOCOL_BUFFER: "protobuf"}


def schema_wire(record: SchemaRecord) -> dict[str, Any]:
    head = record.head
    try:
        definition: Any = json.loads(head.definition)
    except ValueError:  # a Protocol Buffer definition made through Google's API: text
        definition = head.definition
    return {"uuid": record.uuid, "name": head.name, "type": _NAMES[head.type], "schema": definition}


def _spec(body: dict[str, Any], current: SchemaSpec | None = None) -> SchemaSpec:
    raw_type, raw_schema = body.get("type"), body.get("schema")
    if raw_type is None and current is not None:
        schema_type = current.type
    elif isinstance(raw_type, str) and raw_type.lower() in _TYPES:
        schema_type = _TYPES[raw_type.lower()]
    else:
        raise InvalidArgument(f"Invalid schema type: {str(raw_type)[:40]!r} (json or avro)")
    if raw_schema is None and current is not None:
        return SchemaSpec(schema_type, current.definition)
    if not isinstance(raw_schema, dict):
        raise InvalidArgument("Invalid schema: schema must be a JSON object")
    return SchemaSpec(schema_type, json.dumps(raw_schema, separators=(",", ":"), sort_keys=True))


# -- projects/{p}/schemas/{s} -------------------------------------------------------------------------------
def create_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    services().schemas.create(ref.name, _spec(incoming.body))
    return schema_wire(services().schemas.record(ref.name))


def get_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    return schema_wire(services().schemas.record(ref.name))


def update_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    """A new revision with the given type and definition (AMS's rename is not supported)."""
    body = incoming.body
    if body.get("name") not in (None, "", ref.name.path):
        raise InvalidArgument("Renaming a schema is not supported by Metro")
    current = services().schemas.record(ref.name).head.spec
    services().schemas.commit(ref.name, _spec(body, current))
    return schema_wire(services().schemas.record(ref.name))


def validate_message(ref: SchemaRef, incoming: Incoming) -> Result:
    """A JSON schema validates the body itself; an Avro schema the base64 ``data`` field (binary encoding)."""
    body = incoming.body
    schema_type = services().schemas.record(ref.name).head.type
    if schema_type is SchemaType.JSON_SCHEMA:
        message, encoding = json.dumps(body).encode(), Encoding.JSON
    else:
        try:
            message, encoding = base64.b64decode(str(body.get("data", "")), validate=True), Encoding.BINARY
        except (binascii.Error, ValueError):
            raise InvalidArgument("Invalid data: must be base64") from None
    services().schemas.validate_message(ref.name.project, ValidateMessageRequest(message, encoding, ref.name))
    return {"message": "Message validated successfully"}


def list_schemas(project: str, incoming: Incoming) -> Result:
    page = services().schemas.list(project, parsing.page_request(incoming.params))
    return {"schemas": [schema_wire(record) for record in page.items]}


# -- topics -------------------------------------------------------------------------------------------------
def settings_for(incoming: Incoming, schema: object) -> SchemaSettings:
    """A topic's schema settings for AMS's ``{"schema": "projects/p/schemas/s"}``: JSON messages for a JSON
    schema, binary ones for Avro (as AMS publishes them). The caller must be allowed to read that schema."""
    if not isinstance(schema, str) or not schema:
        raise InvalidArgument("Invalid schema: a schema name (projects/{p}/schemas/{s}) is required")
    name = authorize_name(incoming, "schema", names.parse(str(ams.google_name(schema)), "schemas"), READ_SCHEMA)
    schema_type = services().schemas.record(name).head.type
    encoding = Encoding.JSON if schema_type is SchemaType.JSON_SCHEMA else Encoding.BINARY
    return SchemaSettings.model_validate({"schema": name.path, "encoding": encoding.value})


def attach_schema(name: Name, incoming: Incoming) -> Result:
    services().topic_schemas.attach(name, settings_for(incoming, incoming.body.get("schema")))
    return EMPTY


def detach_schema(name: Name, incoming: Incoming) -> Result:
    services().topic_schemas.detach(name)
    return EMPTY


# AMS's verbs, on both endpoints.
TAG = "schemas"
METHODS: tuple[Method, ...] = (
    Method(P.SCHEMA, "POST", "", create_schema, P.PROJECT_ADMIN,
           "Create a schema (AMS: lower-case type, definition as a JSON object)", "AmsSchema", body="AmsSchemaRequest",
           tag=TAG),
    Method(P.SCHEMA, "PUT", "", update_schema, P.PROJECT_ADMIN,
           "A new revision from AMS's shape (omitted type or schema: the current one)", "AmsSchema",
           body="AmsSchemaUpdate", tag=TAG),
    Method(P.SCHEMA, "POST", "validate", validate_message, P.PROJECT_MEMBER,
           "Check a message against the schema (AMS: a JSON body, or Avro's base64 data)", "AmsValidated",
           body="AmsMessage", tag=TAG),
    Method(P.TOPIC, "POST", "attachSchema", attach_schema, P.TOPIC_ADMIN, "Attach a schema to the topic (AMS)",
           body="AttachSchemaRequest", tag="topics"),
    Method(P.TOPIC, "POST", "detachSchema", detach_schema, P.TOPIC_ADMIN, "Detach the topic's schema (AMS)",
           body="Empty", tag="topics"),
)
