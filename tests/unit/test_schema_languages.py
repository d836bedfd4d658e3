"""The schema languages (core/schemas/): what each compiles or refuses, and how messages are checked."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from chalicelib.core.schemas.avro import AvroSchema
from chalicelib.core.schemas.compiled import CompiledCache, compile_spec, conforming
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid
from chalicelib.core.schemas.json_schema import JsonSchema
from chalicelib.core.schemas.model import Encoding, SchemaRevision, SchemaSpec, SchemaType, parse_encoding, parse_type
from chalicelib.core.schemas.protobuf import ProtoSchema
from chalicelib.core.wire.messages import NewMessage

PROTO3 = '''
syntax = "proto3";
package metro.test;  // import in a comment is no statement
option java_package = "org.example";  // file options are accepted and ignored
/* a block comment */
message Order {
  option deprecated = true;
  string id = 1;
  optional int32 qty = 2 [json_name = "quantity"];
  repeated string tags = 3 [packed = false, deprecated = true];
  map<string, Line> lines = 4;
  enum Kind { option allow_alias = true; KIND_UNSPECIFIED = 0; BIG = 1; LARGE = 1; }
  Kind kind = 5;
  message Line { string sku = 1; double price = 2; sint64 delta = 3; }
  oneof pay { string card = 7; bytes token = 8; }
  reserved 10 to 12, 20 to max;
  reserved "old";
  Top top = 9;
  .metro.test.Top again = 21;
}
enum Top { TOP_A = 0; TOP_B = 1; }
'''


def test_proto3_supported_constructs_compile_and_check() -> None:
    schema = ProtoSchema(PROTO3)
    schema.check_json(json.dumps({"id": "x", "quantity": 3, "tags": ["a"], "lines": {"k": {"sku": "s", "price": 1.5,
                                  "delta": "-4"}}, "kind": "LARGE", "card": "c", "top": "TOP_B",
                                  "again": "TOP_A"}).encode())
    message = schema.message_class(id="x", qty=0, token=b"\x00")
    schema.check_binary(message.SerializeToString())
    assert message.HasField("qty")  # proto3 optional keeps presence (its synthetic oneof)
    for bad in (b'{"id": 1}', b'{"nope": 1}', b'{"kind": "SMALL"}', b'{"card": "a", "token": "AA=="}', b"[]"):
        with pytest.raises(MessageInvalid):
            schema.check_json(bad)
    with pytest.raises(MessageInvalid, match="wire format"):
        schema.check_binary(b"\xff\xff\xff")


def test_proto2_required_fields_and_defaults() -> None:
    schema = ProtoSchema('syntax = "proto2"; message M { required string a = 1; optional int32 b = 2 [default = 7];'
                         ' optional string c = 3 [default = "x\\"y"]; repeated int64 d = 4 [packed = true]; }')
    assert schema.message_class().b == 7 and schema.message_class().c == 'x"y'
    schema.check_binary(schema.message_class(a="here").SerializeToString())
    for check in (schema.check_binary, schema.check_json):
        with pytest.raises(MessageInvalid, match="required fields are missing: a"):
            check(b"" if check == schema.check_binary else b"{}")


@pytest.mark.parametrize(("definition", "named"), [
    ('syntax = "proto3"; import "other.proto"; message M {}', "'import' is not supported"),
    ('syntax = "proto3"; message M {} service S { rpc Get(M) returns (M); }', "'service' is not supported"),
    ('syntax = "proto2"; message M { extensions 100 to 199; }', "'extensions' is not supported"),
    ('syntax = "proto2"; message M {} extend M { optional int32 x = 100; }', "'extend' is not supported"),
    ('syntax = "proto2"; message M { optional group G = 1 { optional int32 a = 2; } }', "'group' is not supported"),
    ('edition = "2023"; message M {}', "'edition' is not supported"),
    ('syntax = "proto4"; message M {}', "syntax 'proto4' is not supported"),
    ('syntax = "proto3"; message M { string a = 1 [ctype = CORD]; }', "field option 'ctype' is not supported"),
    ('syntax = "proto3"; message M { required string a = 1; }', "'required' is not allowed in proto3"),
    ('syntax = "proto3"; message M { int32 a = 1 [default = 3]; }', "default values are not allowed in proto3"),
    ('syntax = "proto3"; message A {} message B {}', "exactly one top-level message, found 2"),
    ('syntax = "proto3"; enum E { E0 = 0; }', "exactly one top-level message, found 0"),
    ('syntax = "proto3"; message M { Missing m = 1; }', "Missing"),
    ('syntax = "proto3"; message M { int32 a = 1; int32 b = 1; }', "duplicate field number"),
    ('syntax = "proto3"; message M { map<Other, int32> m = 1; message Other {} }', "map keys must be a scalar"),
    ('syntax = "proto3"; message M { int32 a = 1 ', "unexpected end"),
    ('syntax = "proto3"; message M { int32 a = one; }', "expected an integer"),
    ('syntax = "proto3"; message M { int32 a = 1; } $', "unexpected character"),
])
def test_proto_constructs_outside_the_subset_are_named(definition: str, named: str) -> None:
    with pytest.raises(DefinitionInvalid, match=named.replace("(", r"\(")):
        ProtoSchema(definition)


NESTED_AVRO = {
    "type": "record", "name": "Event", "namespace": "metro.test", "fields": [
        {"name": "id", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "payload", "type": ["null", "bytes", "Kind", "metro.test.Hash"], "default": None},
        {"name": "child", "type": ["null", "Event"], "default": None},
        {"name": "ratio", "type": "float", "default": 0.5},
    ]}
VALID_EVENT = {"id": "e", "kind": "B", "hash": "\u00ff\u0000ab", "tags": ["x"], "counts": {"a": 1},
               "when": 5, "payload": {"metro.test.Kind": "A"},
               "child": {"metro.test.Event": {"id": "c", "kind": "A", "hash": "abcd", "tags": [], "counts": {},
                                              "when": 0}}}


def test_avro_json_encoding_follows_the_specification() -> None:
    schema = AvroSchema(json.dumps(NESTED_AVRO))
    schema.check_json(json.dumps(VALID_EVENT).encode())
    wrong: list[tuple[dict[str, Any], str]] = [
             ({"kind": "C"}, "enum"), ({"hash": "abc"}, "fixed of 4"), ({"tags": "x"}, "expected array"),
             ({"counts": {"a": 1.5}}, "expected long"), ({"counts": {"a": 2**63}}, "out of range"),
             ({"payload": {"int": 1}}, "not a branch"), ({"payload": "raw"}, "union value"),
             ({"hash": "\u0100abc"}, "code points"), ({"ratio": "x"}, "a number"), ({"id": None}, "expected string"),
             ({"child": {"metro.test.Event": {"id": "c"}}}, "missing")]
    for change, reason in wrong:
        with pytest.raises(MessageInvalid, match=reason):
            schema.check_json(json.dumps({**VALID_EVENT, **change}).encode())


def test_avro_binary_must_be_read_exactly() -> None:
    schema = AvroSchema(json.dumps(NESTED_AVRO))
    out = io.BytesIO()
    value = {**VALID_EVENT, "hash": b"abcd", "payload": b"\x00", "child": None}
    fastavro.schemaless_writer(out, schema.parsed, value)
    schema.check_binary(out.getvalue())
    for bad in (out.getvalue() + b"\x00", out.getvalue()[:-1], b""):
        with pytest.raises(MessageInvalid):
            schema.check_binary(bad)


@pytest.mark.parametrize("definition", ["", "nope", '{"type": "record"}', '{"type": "record", "name": "R"}',
                                        '{"type": "enum", "name": "E"}', '{"type": "nosuchtype"}', "[]", "[1]"])
def test_bad_avro_definitions_are_invalid_arguments(definition: str) -> None:
    with pytest.raises(DefinitionInvalid):
        compile_spec(SchemaSpec(SchemaType.AVRO, definition))


def test_json_schema_draft_2020_12() -> None:
    schema = JsonSchema(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                                    "properties": {"n": {"type": "integer", "minimum": 1},
                                                   "items": {"type": "array", "prefixItems": [{"type": "string"}]}},
                                    "required": ["n"], "additionalProperties": False}))
    schema.check_json(b'{"n": 1, "items": ["a", 2]}')
    for bad, reason in ((b"{}", "'n' is a required property"), (b'{"n": 0}', "minimum"),
                        (b'{"n": 1, "x": 1}', "additionalProperties"), (b'{"n": 1, "items": [3]}', "items/0")):
        with pytest.raises(MessageInvalid, match=reason):
            schema.check_json(bad)
    with pytest.raises(DefinitionInvalid, match="at properties/n/type"):
        JsonSchema('{"properties": {"n": {"type": "nope"}}}')
    with pytest.raises(DefinitionInvalid, match="object or a boolean"):
        JsonSchema("[]")


def test_enums_in_both_dialects() -> None:
    assert parse_type("AVRO") is parse_type(2) is parse_type("2") is SchemaType.AVRO
    assert parse_type(3) is SchemaType.JSON_SCHEMA
    assert parse_encoding(2) is parse_encoding("BINARY") is Encoding.BINARY
    for bad in (None, 0, "TYPE_UNSPECIFIED", 9, "avro", True, "²"):  # "²" is a digit to str.isdigit, not to int()
        with pytest.raises(Exception, match="schema type"):
            parse_type(bad)
    with pytest.raises(Exception, match="Invalid schema encoding provided"):
        parse_encoding(None)


def _revision(revision_id: str, definition: str, created: float) -> SchemaRevision:
    return SchemaRevision("projects/p/schemas/s", SchemaType.JSON_SCHEMA, definition, revision_id, "t", created)


def test_the_cache_compiles_each_revision_once_and_the_newest_accepting_revision_is_reported() -> None:
    cache = CompiledCache(max_items=2)
    strict = _revision("new", '{"required": ["a", "b"]}', 2)
    loose = _revision("old", '{"required": ["a"]}', 1)
    checkers = [(r, cache.get(r)) for r in (strict, loose)]
    for _ in range(3):
        cache.get(strict)
    assert cache.compiled == 2
    out = conforming(checkers, Encoding.JSON, [NewMessage(b'{"a": 1, "b": 2}'), NewMessage(b'{"a": 1}', {"k": "v"})])
    assert [m.attributes.get("googclient_schemarevisionid") for m in out] == ["new", "old"]
    assert out[1].attributes["k"] == "v"
    with pytest.raises(MessageInvalid) as refused:
        conforming(checkers, Encoding.JSON, [NewMessage(b'{"a": 1}'), NewMessage(b"{}")])
    assert refused.value.index == 1 and "(message 1)" in refused.value.message
    cache.get(_revision("third", "{}", 3))  # over the bound: the least recently used goes
    cache.get(loose)
    assert cache.compiled == 4


@pytest.mark.parametrize(("kind", "definition"), [
    (SchemaType.AVRO, '{"type": "array", "items": ' * 3000 + '"int"' + "}" * 3000),
    (SchemaType.JSON_SCHEMA, '{"items": ' * 600 + "{}" + "}" * 600),
    (SchemaType.JSON_SCHEMA, '{"items": ' * 3000 + "{}" + "}" * 3000),
])
def test_deeply_nested_definitions_are_invalid_arguments(kind: SchemaType, definition: str) -> None:
    with pytest.raises(DefinitionInvalid, match=r"nested too deeply|not JSON"):
        compile_spec(SchemaSpec(kind, definition))


def test_deeply_nested_messages_are_refused() -> None:
    from chalicelib.core.schemas.compiled import check_message
    nested = json.dumps({"type": "record", "name": "N", "fields": [{"name": "n", "type": ["null", "N"]}]})
    checker = compile_spec(SchemaSpec(SchemaType.AVRO, nested))
    message = ('{"n": {"N": ' * 400 + '{"n": null}' + "}}" * 400).encode()  # json reads it; the walk goes deeper
    with pytest.raises(MessageInvalid, match="nested too deeply"):
        check_message(checker, message, Encoding.JSON)
