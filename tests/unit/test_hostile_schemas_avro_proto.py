"""Hostile Avro and Protocol Buffer definitions: nothing in them reaches a file or the network, and none makes a
small message expensive or crashes the process that checks it (tests/unit/test_hostile_schemas.py has JSON
Schema's)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib.core.schemas.compiled import check_message, compile_spec
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid
from chalicelib.core.schemas.model import Encoding, SchemaSpec, SchemaType
from tests.unit.test_hostile_schemas import Listener

ROOT = Path(__file__).resolve().parents[2]
LINKED_LIST = {"type": "record", "name": "Link", "namespace": "h",
               "fields": [{"name": "next", "type": ["null", "Link"]}]}


@pytest.fixture
def listener() -> Iterator[Listener]:
    listening = Listener()
    yield listening
    listening.close()


def _avro(definition: Any) -> Any:
    return compile_spec(SchemaSpec(SchemaType.AVRO, json.dumps(definition)))


def _proto(text: str) -> Any:
    return compile_spec(SchemaSpec(SchemaType.PROTOCOL_BUFFER, text))


DEEP_LINKS = """
import sys
from chalicelib.core.schemas.compiled import check_message, compile_spec
from chalicelib.core.schemas.invalid import MessageInvalid
from chalicelib.core.schemas.model import Encoding, SchemaSpec, SchemaType

checker = compile_spec(SchemaSpec(SchemaType.AVRO, sys.argv[1]))
check_message(checker, b"\\x02" * 100 + b"\\x00", Encoding.BINARY)
try:
    check_message(checker, b"\\x02" * 200_000 + b"\\x00", Encoding.BINARY)
except MessageInvalid as exc:
    print("refused:", exc.reason)
"""


def test_a_message_nesting_a_recursive_avro_type_deeply_is_refused_without_killing_the_process() -> None:
    """200,000 links in 200 KB: fastavro's compiled reader recursed in C until the stack overflowed (SIGSEGV)."""
    done = subprocess.run([sys.executable, "-c", DEEP_LINKS, json.dumps(LINKED_LIST)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"the checking process died ({done.returncode}): {done.stderr[-1500:]}"
    assert "refused:" in done.stdout


ZERO_BYTE_ITEMS = {
    "null": "null",
    "null object": {"type": "null"},
    "empty record": {"type": "record", "name": "Empty", "fields": []},
    "record of nulls": {"type": "record", "name": "Nulls", "fields": [{"name": "a", "type": "null"},
                                                                      {"name": "b", "type": {"type": "null"}}]},
    "fixed of size 0": {"type": "fixed", "name": "Zero", "size": 0},
}


@pytest.mark.parametrize("case", sorted(ZERO_BYTE_ITEMS))
def test_an_array_of_items_that_take_no_bytes_is_refused(case: str) -> None:
    """Five bytes could announce 2**62 such items; reading ten million of them took 3 s and a gigabyte."""
    with pytest.raises(DefinitionInvalid, match="at least a byte"):
        _avro({"type": "record", "name": "R", "fields": [{"name": "items", "type": {"type": "array",
                                                                                    "items": ZERO_BYTE_ITEMS[case]}}]})


def test_an_array_of_a_named_zero_byte_type_is_refused_and_other_arrays_are_not() -> None:
    with pytest.raises(DefinitionInvalid, match="at least a byte"):
        _avro({"type": "record", "name": "R", "fields": [
            {"name": "z", "type": {"type": "fixed", "name": "Z", "size": 0}},
            {"name": "zs", "type": {"type": "array", "items": "Z"}}]})
    for items in ("int", {"type": "enum", "name": "One", "symbols": ["A"]}, ["null"], {"type": "map", "values": "null"},
                  {"type": "array", "items": "boolean"}, {"type": "fixed", "name": "B", "size": 1}):
        _avro({"type": "array", "items": items})


@pytest.mark.parametrize("definition", [
    {"type": "record", "name": "A", "fields": [{"name": "a", "type": "A"}]},
    {"type": "record", "name": "A", "fields": [
        {"name": "b", "type": {"type": "record", "name": "B", "fields": [{"name": "a", "type": "A"}]}}]},
    {"type": "record", "name": "A", "namespace": "n", "fields": [{"name": "x", "type": "int"},
                                                                  {"name": "self", "type": "n.A"}]},
])
def test_a_record_that_always_contains_itself_is_refused(definition: Any) -> None:
    with pytest.raises(DefinitionInvalid, match="always contains itself"):
        _avro(definition)


def test_recursion_that_a_union_array_or_map_ends_still_works() -> None:
    tree = {"type": "record", "name": "Tree", "fields": [
        {"name": "kids", "type": {"type": "array", "items": "Tree"}},
        {"name": "named", "type": {"type": "map", "values": "Tree"}}]}
    check_message(_avro(tree), b'{"kids": [{"kids": [], "named": {}}], "named": {}}', Encoding.JSON)
    check_message(_avro(tree), b"\x02\x00\x00\x00\x00", Encoding.BINARY)
    links = _avro(LINKED_LIST)
    check_message(links, b'{"next": {"h.Link": {"next": null}}}', Encoding.JSON)
    with pytest.raises(MessageInvalid):
        check_message(links, b"\x02\x02\x04", Encoding.BINARY)


def test_huge_and_deep_avro_definitions_are_refused() -> None:
    _avro({"type": "enum", "name": "E", "symbols": [f"S{i}" for i in range(10_000)]})
    with pytest.raises(DefinitionInvalid, match="at most 10000 symbols"):
        _avro({"type": "enum", "name": "E", "symbols": [f"S{i}" for i in range(10_001)]})
    nested: Any = "int"
    for _ in range(70):  # fastavro parses 70 levels; Metro reads at most 64
        nested = {"type": "array", "items": nested}
    with pytest.raises(DefinitionInvalid, match="nested too deeply"):
        _avro(nested)


def test_avro_names_are_never_fetched_nor_shared_between_definitions(listener: Listener, tmp_path: Path) -> None:
    (tmp_path / "T.avsc").write_text(json.dumps({"type": "fixed", "name": "T", "size": 1}))
    for name in (f"{listener.url}/T.avsc", (tmp_path / "T.avsc").as_uri(), "T", str(tmp_path / "T")):
        with pytest.raises(DefinitionInvalid):
            _avro({"type": "record", "name": "R", "fields": [{"name": "t", "type": name}]})
    _avro({"type": "record", "name": "Shared", "namespace": "h", "fields": []})
    with pytest.raises(DefinitionInvalid):
        _avro({"type": "array", "items": "h.Shared"})  # a name another definition defined
    assert listener.seen == []


def test_proto_definitions_read_no_file_and_resolve_no_option(listener: Listener, tmp_path: Path) -> None:
    (tmp_path / "other.proto").write_text('syntax = "proto3"; message Other { string s = 1; }')
    for text in (f'syntax = "proto3"; import "{tmp_path / "other.proto"}"; message M {{ Other o = 1; }}',
                 'syntax = "proto3"; import public "other.proto"; message M { string s = 1; }',
                 'syntax = "proto3"; message M { google.protobuf.Timestamp t = 1; }'):
        with pytest.raises(DefinitionInvalid):
            _proto(text)
    checker = _proto(f'syntax = "proto3"; option (metro.source) = "{listener.url}/x"; option java_package = '
                     f'"file:///etc/passwd"; message M {{ option (m) = "{listener.url}"; string s = 1; }}')
    check_message(checker, b'{"s": "x"}', Encoding.JSON)
    assert listener.seen == []


def test_huge_and_hostile_proto_texts_are_refused() -> None:
    values = " ".join(f"V{i} = {i};" for i in range(10_001))
    with pytest.raises(DefinitionInvalid, match="at most 10000 values"):
        _proto(f'syntax = "proto3"; message M {{ enum E {{ {values} }} E e = 1; }}')
    _proto('syntax = "proto3"; message M { enum E { ' + values.rsplit(" V10000", 1)[0] + " } E e = 1; }")
    for text in ('syntax = "proto3"; message M { string a = 1 [json_name = "' + "a" * 290_000,
                 "/*" + "*" * 290_000, 'message M { string a = ' + "1" * 290_000 + "; }",
                 "message M {" * 40 + "}" * 40):
        with pytest.raises(DefinitionInvalid):
            _proto(text)


def test_deep_proto_messages_are_refused_in_both_encodings() -> None:
    checker = _proto('syntax = "proto3"; message L { L next = 1; }')
    binary = b""
    for _ in range(5_000):
        size = len(binary)
        varint = bytearray()
        while size > 0x7F:
            varint.append((size & 0x7F) | 0x80)
            size >>= 7
        binary = b"\x0a" + bytes(varint) + bytes([size]) + binary
    with pytest.raises(MessageInvalid):
        check_message(checker, binary, Encoding.BINARY)
    with pytest.raises(MessageInvalid):
        check_message(checker, ('{"next":' * 5_000 + "{}" + "}" * 5_000).encode(), Encoding.JSON)
