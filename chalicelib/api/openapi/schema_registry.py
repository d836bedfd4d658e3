"""The schema registry's part of the OpenAPI description: Google's schema methods (api/schema_handlers.py,
api/schema_requests.py), AMS's schema verbs and the topic's attachSchema/detachSchema (api/ams/schema_handlers.py),
their component schemas, query and path parameters. api/openapi/description.py and api/openapi/components.py merge them.

The Google endpoint is the one described: on the AMS endpoint ``GET .../schemas`` and ``GET .../schemas/{s}``
answer in AMS's shape (``AmsSchema``); the AMS verbs answer the same on both.
"""

from __future__ import annotations

from chalicelib.api.openapi.parts import RESOURCE_ID, STRING, TIMESTAMP, Schema, array, obj, ref

TAG = "schemas"

# Either JSON dialect: the enum's name, or its number (also as a decimal string), as core/schemas/model.py reads it.
def _enum(names: list[str], top: int) -> Schema:
    return {"anyOf": [{"enum": names}, {"type": "integer", "minimum": 1, "maximum": top},
                      {"type": "string", "pattern": rf"^\s*0*[1-{top}]\s*$"}]}


_TYPE = _enum(["PROTOCOL_BUFFER", "AVRO", "JSON_SCHEMA"], 3)
_ENCODING = _enum(["JSON", "BINARY"], 2)
# A schema (Google's Schema message); output-only fields are read and ignored in a request.
_SCHEMA = obj({"name": STRING, "type": _TYPE, "definition": STRING, "revisionId": STRING,
               "revisionCreateTime": TIMESTAMP}, ("type",))
_LIST = obj({"schemas": array(ref("Schema")), "nextPageToken": STRING})
AVRO_EXAMPLE = '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "string"}]}'
_AMS_TYPE: Schema = {"type": "string", "pattern": "^([Jj][Ss][Oo][Nn]|[Aa][Vv][Rr][Oo])$"}

REQUESTS: dict[str, Schema] = {
    "SchemaRequest": _SCHEMA,  # as a request body its fields may be null (api/openapi/components.py)
    "CommitSchemaRequest": {**obj({"schema": ref("SchemaRequest"), "name": STRING}, ("schema",)),
                            "example": {"schema": {"type": "AVRO", "definition": AVRO_EXAMPLE}}},
    "RollbackSchemaRequest": obj({"revisionId": {"type": "string", "minLength": 1}, "name": STRING},
                                 ("revisionId",)),
    "ValidateSchemaRequest": obj({"schema": ref("SchemaRequest"), "name": STRING, "parent": STRING}, ("schema",)),
    "ValidateMessageRequest": obj({"name": STRING, "schema": ref("SchemaRequest"),
                                   "message": {"type": "string", "format": "byte"}, "encoding": _ENCODING,
                                   "parent": STRING}, ("encoding",)),
    "AmsSchemaRequest": obj({"name": STRING, "type": _AMS_TYPE, "schema": {"type": "object"}}, ("type", "schema")),
    "AmsSchemaUpdate": obj({"name": STRING, "type": _AMS_TYPE, "schema": {"type": "object"}}),
    "AmsMessage": {"type": "object", "description": "a JSON schema validates this object; Avro its base64 `data`"},
    "AttachSchemaRequest": obj({"schema": {"type": "string", "minLength": 1,
                                           "description": "projects/{p}/schemas/{s} (AMS's leading slash allowed)"}},
                               ("schema",)),
}
RESPONSES: dict[str, Schema] = {
    "Schema": _SCHEMA,
    "DeletedSchema": {"anyOf": [ref("Schema"), {"type": "object", "maxProperties": 0}]},
    "ListSchemasResponse": _LIST,
    "ListSchemaRevisionsResponse": _LIST,
    "AmsSchema": obj({"uuid": STRING, "name": STRING, "type": {"enum": ["json", "avro", "protobuf"]},
                      "schema": {"type": ["object", "string"]}}, ("uuid", "name", "type", "schema")),
    "AmsValidated": obj({"message": STRING}, ("message",)),
}

PATH_PARAMETERS: dict[str, Schema] = {
    # schemas/{id} or schemas/{id}@{revision} (core/schemas/model.py's split_revision)
    "schema": {**RESOURCE_ID, "pattern": r"^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}(@[A-Za-z0-9\-_.~]*)?$",
               "example": "fuzz-schema"},
}
QUERY: dict[str, Schema] = {
    "schemaId": RESOURCE_ID,
    "revisionId": {"type": "string", "description": "required unless the path names schemas/{id}@{revision}"},
    "view": {"anyOf": [{"enum": ["SCHEMA_VIEW_UNSPECIFIED", "BASIC", "FULL", ""]},
                       {"type": "integer", "minimum": 0, "maximum": 2}]},
}
