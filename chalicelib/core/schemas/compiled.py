"""Compiling a schema revision into a message checker, and the per-process cache of compiled revisions.

A revision never changes, so its compiled form is kept by (schema name, revision id) for the life of the
process (least recently used first out): publish parses a definition once, not once per message.

Each language's module (and fastavro, jsonschema or the protobuf runtime with it) is imported the first time a
definition of that language is compiled: a function that never meets a schema does not pay for loading them
on a cold start.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol, cast

from chalicelib.core.schemas import budget
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid
from chalicelib.core.schemas.model import MAX_DEFINITION_BYTES, Encoding, SchemaRevision, SchemaSpec, SchemaType
from chalicelib.core.wire.messages import NewMessage

SCHEMA_NAME = "googclient_schemaname"
SCHEMA_ENCODING = "googclient_schemaencoding"
SCHEMA_REVISION = "googclient_schemarevisionid"


class Checker(Protocol):
    def check_json(self, data: bytes) -> None: ...

    def check_binary(self, data: bytes) -> None: ...


_LANGUAGES: dict[SchemaType, tuple[str, str]] = {  # the module and the class that compile each language
    SchemaType.AVRO: ("chalicelib.core.schemas.avro", "AvroSchema"),
    SchemaType.PROTOCOL_BUFFER: ("chalicelib.core.schemas.protobuf", "ProtoSchema"),
    SchemaType.JSON_SCHEMA: ("chalicelib.core.schemas.json_schema", "JsonSchema"),
}


def _compiler(kind: SchemaType) -> Callable[[str], Checker]:
    module, name = _LANGUAGES[kind]
    return cast("Callable[[str], Checker]", getattr(importlib.import_module(module), name))


def compile_spec(spec: SchemaSpec) -> Checker:
    """The checker of a definition, or DefinitionInvalid naming what is wrong in it."""
    if not spec.definition.strip():
        raise DefinitionInvalid("the definition is empty")
    if len(spec.definition.encode()) > MAX_DEFINITION_BYTES:
        raise DefinitionInvalid(f"a definition must be at most {MAX_DEFINITION_BYTES} bytes")
    try:
        return _compiler(spec.type)(spec.definition)
    except RecursionError:
        raise DefinitionInvalid("the definition is nested too deeply") from None


def check_message(checker: Checker, data: bytes, encoding: Encoding) -> None:
    """MessageInvalid when ``data`` does not conform."""
    try:
        if encoding is Encoding.JSON:
            checker.check_json(data)
        else:
            checker.check_binary(data)
    except RecursionError:
        raise MessageInvalid("the message is nested too deeply") from None


class CompiledCache:
    """Compiled revisions by (schema name, revision id); thread-safe, bounded, least recently used out."""

    def __init__(self, max_items: int = 256) -> None:
        self._max = max_items
        self._items: OrderedDict[tuple[str, str], Checker] = OrderedDict()
        self._lock = threading.Lock()
        self.compiled = 0  # how many compilations the cache has done (a test and the benchmark read it)

    def get(self, revision: SchemaRevision) -> Checker:
        key = (revision.name, revision.revision_id)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        checker = compile_spec(revision.spec)
        with self._lock:
            self.compiled += 1
            self._items[key] = checker
            while len(self._items) > self._max:
                self._items.popitem(last=False)
        return checker


def conforming(checkers: Sequence[tuple[SchemaRevision, Checker]], encoding: Encoding,
               messages: Sequence[NewMessage]) -> list[NewMessage]:
    """Each message checked against the revisions (newest first; the first that accepts it wins) and given the
    attributes that say which revision that was; MessageInvalid names the first failing message's index.

    All the checks share one work budget, sized by the messages' bytes (core/schemas/budget.py): however many
    messages and revisions, a request's checks cost time linear in its size."""
    out: list[NewMessage] = []
    with budget.opened(budget.allowance(sum(len(message.data) for message in messages))):
        for index, message in enumerate(messages):
            revision = _accepting(checkers, encoding, message.data, index)
            attributes = {**message.attributes, SCHEMA_NAME: revision.name, SCHEMA_ENCODING: encoding.value,
                          SCHEMA_REVISION: revision.revision_id}
            out.append(NewMessage(message.data, attributes, message.ordering_key))
    return out


def _accepting(checkers: Sequence[tuple[SchemaRevision, Checker]], encoding: Encoding, data: bytes,
               index: int) -> SchemaRevision:
    first_error: MessageInvalid | None = None
    for revision, checker in checkers:
        try:
            check_message(checker, data, encoding)
            return revision
        except MessageInvalid as exc:
            first_error = first_error or exc
    assert first_error is not None, "a topic's schema has at least one revision"
    raise first_error.at(index)
