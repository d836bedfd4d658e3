"""The schema resource as Metro keeps it: one revision is an immutable (type, definition) with its id and time.

Google's Schema message renders from a :class:`SchemaRevision`; AMS's view (a uuid, a lower-case type, the
definition as a JSON object) is built from the same values by its own dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from chalicelib.core import names
from chalicelib.core.access.references import READ_SCHEMA
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.names import Name

REVISION_SEPARATOR = "@"  # projects/p/schemas/s@{revision id} names one revision
DELETED_SCHEMA = "_deleted-schema_"  # what a topic's schemaSettings.schema becomes when its schema is deleted
MAX_DEFINITION_BYTES = 300 * 1024  # Google's limit on a schema definition


class SchemaType(StrEnum):
    AVRO = "AVRO"
    PROTOCOL_BUFFER = "PROTOCOL_BUFFER"
    JSON_SCHEMA = "JSON_SCHEMA"  # Metro's addition (AMS offers JSON Schema); numbered 3 in the int-enum dialect


class Encoding(StrEnum):
    JSON = "JSON"
    BINARY = "BINARY"


class View(StrEnum):
    BASIC = "BASIC"  # name, type, revision id and time; no definition
    FULL = "FULL"


# The int-enum dialect's numbers (Google's Schema.Type and Encoding; JSON_SCHEMA is Metro's).
TYPE_NUMBERS = {"TYPE_UNSPECIFIED": 0, "PROTOCOL_BUFFER": 1, "AVRO": 2, "JSON_SCHEMA": 3}
ENCODING_NUMBERS = {"ENCODING_UNSPECIFIED": 0, "JSON": 1, "BINARY": 2}
VIEW_NUMBERS = {"SCHEMA_VIEW_UNSPECIFIED": 0, "BASIC": 1, "FULL": 2}


def _enum_value(raw: object, numbers: dict[str, int], what: str) -> str:
    """An enum as either JSON dialect sends it: its name, or its number (also as a decimal string)."""
    if isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit():  # int() fails on "²"
        raw = int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        for name, number in numbers.items():
            if number == raw:
                return name
        raise InvalidArgument(f"Invalid {what}: {raw}")
    if isinstance(raw, str) and raw in numbers:
        return raw
    raise InvalidArgument(f"Invalid {what}: {str(raw)[:40]}")


def parse_type(raw: object) -> SchemaType:
    name = _enum_value(raw if raw is not None else "TYPE_UNSPECIFIED", TYPE_NUMBERS, "schema type")
    if name == "TYPE_UNSPECIFIED":
        raise InvalidArgument("Invalid schema type")
    return SchemaType(name)


def parse_encoding(raw: object) -> Encoding:
    name = _enum_value(raw if raw is not None else "ENCODING_UNSPECIFIED", ENCODING_NUMBERS, "schema encoding")
    if name == "ENCODING_UNSPECIFIED":
        raise InvalidArgument("Invalid schema encoding provided")
    return Encoding(name)


def parse_view(raw: object, default: View) -> View:
    if raw is None or raw == "":
        return default
    name = _enum_value(raw, VIEW_NUMBERS, "schema view")
    return default if name == "SCHEMA_VIEW_UNSPECIFIED" else View(name)


def parse_schema_name(path: str) -> tuple[Name, str]:
    """``projects/p/schemas/s`` or ``projects/p/schemas/s@rev`` -> (the schema's name, the revision id or "")."""
    base, _, revision_id = path.partition(REVISION_SEPARATOR) if isinstance(path, str) else ("", "", "")
    return names.parse(base, "schemas"), revision_id


def split_revision(resource_id: str) -> tuple[str, str]:
    """``s@abc`` (a URL's last segment) -> (``s``, ``abc``); a bare id has no revision."""
    schema_id, _, revision_id = resource_id.partition(REVISION_SEPARATOR)
    return schema_id, revision_id


@dataclass(frozen=True)
class SchemaSpec:
    """What a client submits: a type and its definition (the schema text)."""

    type: SchemaType
    definition: str


@dataclass(frozen=True)
class SchemaRevision:
    """One revision of a schema; revisions are never changed, only added and deleted."""

    name: str  # projects/{p}/schemas/{id}
    type: SchemaType
    definition: str
    revision_id: str
    revision_create_time: str  # RFC 3339
    created: float  # the same instant, for ordering

    @property
    def spec(self) -> SchemaSpec:
        return SchemaSpec(self.type, self.definition)

    def to_wire(self) -> dict[str, Any]:
        return ShownSchema(self, View.FULL).to_wire()


@dataclass(frozen=True)
class SchemaRecord:
    """A schema: its newest revision (what get returns) and the uuid AMS reports."""

    head: SchemaRevision
    uuid: str

    @property
    def name(self) -> str:
        return self.head.name


@dataclass(frozen=True)
class ShownSchema:
    """A revision as a response shows it in ``view`` (BASIC leaves the definition out)."""

    revision: SchemaRevision
    view: View = View.FULL

    def to_wire(self) -> dict[str, Any]:
        rev = self.revision
        out: dict[str, Any] = {"name": rev.name, "type": rev.type.value}
        if self.view is View.FULL:
            out["definition"] = rev.definition
        out["revisionId"] = rev.revision_id
        out["revisionCreateTime"] = rev.revision_create_time
        return out


@dataclass(frozen=True)
class TopicSchema:
    """A topic's schema settings, checked: the schema's name, the encoding, and the allowed revision range
    (empty ends are open)."""

    schema: str
    encoding: Encoding
    first_revision_id: str = ""
    last_revision_id: str = ""


@dataclass(frozen=True)
class ValidateMessageRequest:
    """``schemas:validateMessage``: a message checked against a stored schema (``schema``: its newest revision,
    or ``revision_id``) or an inline one (``spec``)."""

    message: bytes
    encoding: Encoding
    schema: Annotated[Name | None, READ_SCHEMA] = None
    revision_id: str = ""
    spec: SchemaSpec | None = None
