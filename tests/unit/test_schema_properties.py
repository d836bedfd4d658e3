"""Property tests of the schema encodings: whatever fastavro writes (Avro's JSON and binary encodings) is
accepted, a value of the wrong type is refused, and no input makes a checker or a compiler fail any other way
than with INVALID_ARGUMENT."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.schemas.avro import AvroSchema
from chalicelib.core.schemas.compiled import compile_spec
from chalicelib.core.schemas.invalid import MessageInvalid
from chalicelib.core.schemas.json_schema import JsonSchema
from chalicelib.core.schemas.model import SchemaSpec, SchemaType
from chalicelib.core.schemas.protobuf import ProtoSchema

INNER = {"type": "record", "name": "Inner", "fields": [{"name": "note", "type": "string"}]}
AVRO = {"type": "record", "name": "Sample", "namespace": "metro.prop", "fields": [
    {"name": "s", "type": "string"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"}, {"name": "raw", "type": "bytes"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
    {"name": "ints", "type": {"type": "array", "items": "int"}},
    {"name": "names", "type": {"type": "map", "values": "string"}},
    {"name": "choice", "type": ["null", "string", "Kind", "long"]},
    {"name": "inner", "type": ["null", INNER]},
]}
SCHEMA = AvroSchema(json.dumps(AVRO))
PARSED = fastavro.parse_schema(AVRO)
INT32 = st.integers(-(2**31), 2**31 - 1)
KINDS = st.sampled_from(["A", "B", "C"])

samples = st.fixed_dictionaries({
    "s": st.text(), "i": INT32, "l": st.integers(-(2**63), 2**63 - 1),
    "d": st.floats(allow_nan=False, allow_infinity=False), "b": st.booleans(), "raw": st.binary(max_size=32),
    "kind": KINDS, "ints": st.lists(INT32, max_size=5),
    "names": st.dictionaries(st.text(min_size=1), st.text(), max_size=4),  # fastavro cannot write a "" key
    "choice": st.one_of(st.none(), st.text(), st.integers(-(2**63), 2**63 - 1)),
    "inner": st.one_of(st.none(), st.fixed_dictionaries({"note": st.text()})),
})
# A field and a value of the wrong JSON type for it (also wrong in the Avro JSON encoding).
wrong = st.sampled_from([("s", 1), ("i", "1"), ("i", 2**31), ("l", 1.5), ("d", "x"), ("b", 0), ("raw", 1),
                         ("kind", "D"), ("ints", [1, "2"]), ("names", {"k": 1}), ("choice", "bare string"),
                         ("choice", {"int": 1}), ("inner", {"note": "unwrapped"})])


def _avro_json(value: dict[str, Any]) -> bytes:
    out = io.StringIO()
    fastavro.json_writer(out, PARSED, [value])
    return out.getvalue().strip().encode()


def _avro_binary(value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED, value)
    return out.getvalue()


@settings(max_examples=150, deadline=None)
@given(samples)
def test_what_fastavro_writes_is_accepted_in_both_encodings(value: dict[str, Any]) -> None:
    SCHEMA.check_json(_avro_json(value))
    SCHEMA.check_binary(_avro_binary(value))


@settings(max_examples=150, deadline=None)
@given(samples, wrong)
def test_a_value_of_the_wrong_type_is_refused(value: dict[str, Any], change: tuple[str, Any]) -> None:
    document = json.loads(_avro_json(value))
    field, bad = change
    document[field] = bad
    try:
        SCHEMA.check_json(json.dumps(document).encode())
    except MessageInvalid as exc:
        assert f"$.{field}" in exc.reason
    else:
        raise AssertionError(f"{field}={bad!r} was accepted")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_accepted_or_refused_never_crash(data: bytes) -> None:
    for check in (SCHEMA.check_json, SCHEMA.check_binary):
        with contextlib.suppress(MessageInvalid):
            check(data)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                           max_leaves=20)
PERSON = JsonSchema(json.dumps({"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}}))


@settings(max_examples=150, deadline=None)
@given(st.text(), st.integers(min_value=0), json_values)
def test_json_schema_accepts_conforming_documents_and_names_the_failing_field(name: str, age: int, other: Any) -> None:
    PERSON.check_json(json.dumps({"name": name, "age": age}).encode())
    if isinstance(other, str):
        return
    try:
        PERSON.check_json(json.dumps({"name": other}).encode())
    except MessageInvalid as exc:
        assert exc.reason.startswith("name: ")
    else:
        raise AssertionError(f"name={other!r} was accepted")


PROTO_WORDS = st.sampled_from(['syntax = "proto3";', 'syntax = "proto2";', "message", "M", "{", "}", ";", "=", "1",
                               "string", "int32", "repeated", "optional", "required", "oneof", "map", "<", ">", ",",
                               "enum", "E", "reserved", "to", "max", "[", "]", "default", "option", "x", '"s"',
                               "import", "package", "a.b", "-", "0x10", "//c\n", "/*", "*/"])


@settings(max_examples=300, deadline=None)
@given(st.lists(PROTO_WORDS, max_size=40).map(" ".join) | st.text(max_size=80))
def test_any_definition_compiles_or_is_an_invalid_argument(text: str) -> None:
    for kind in SchemaType:
        with contextlib.suppress(InvalidArgument):
            compile_spec(SchemaSpec(kind, text))


def test_a_proto_message_round_trips_through_both_encodings() -> None:
    schema = ProtoSchema('syntax = "proto3"; message M { string a = 1; repeated int64 b = 2; }')
    message = schema.message_class(a="x", b=[1, 2**40])
    schema.check_binary(message.SerializeToString())
    from google.protobuf import json_format
    schema.check_json(json_format.MessageToJson(message).encode())
