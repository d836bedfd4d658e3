"""Avro schemas (fastavro parses the definition) and their two message encodings.

JSON follows the Avro specification's JSON encoding, as Google's emulator checks it: a union value other than
null is an object with one key naming the branch (``{"int": 3}``), bytes and fixed are strings of code points
0-255, fields without a default must be present, and fields the schema does not name are ignored. The JSON
check is a tree of small functions built once per revision from the schema, so a message costs one
``json.loads`` and one walk. BINARY is read with fastavro's schemaless reader and must be consumed exactly: its
compiled reader, or its Python reader for a recursive schema (core/schemas/avro_shape.py says why).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro
from fastavro import _read_py  # fastavro's reader in Python: recursion stops at Python's limit, not in C
from fastavro.schema import SchemaParseException, UnknownType

from chalicelib.core.schemas.avro_shape import read_shape
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid, definition_json, message_json

Check = Callable[[Any, str], None]  # (decoded JSON value, its path for messages) -> None or MessageInvalid
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class AvroSchema:
    """A compiled Avro revision: checks messages in either encoding."""

    def __init__(self, definition: str) -> None:
        raw = definition_json(definition)
        try:
            self.parsed = fastavro.parse_schema(raw, _write_hint=False)
        except KeyError as exc:
            raise DefinitionInvalid(f"not a valid Avro schema: a type is missing its {exc.args[0]!r}") from None
        except (SchemaParseException, UnknownType, ValueError, TypeError, AttributeError) as exc:
            raise DefinitionInvalid(f"not a valid Avro schema: {exc}") from None
        recursive = read_shape(self.parsed)
        self._read = _read_py.schemaless_reader if recursive else fastavro.schemaless_reader
        try:
            self._check = _Builder().build(raw, namespace="")
        except KeyError as exc:  # fastavro lets a few omissions through (a record without fields)
            raise DefinitionInvalid(f"not a valid Avro schema: a type is missing its {exc.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise DefinitionInvalid(f"not a valid Avro schema: {exc}") from None

    def check_json(self, data: bytes) -> None:
        self._check(message_json(data), "$")

    def check_binary(self, data: bytes) -> None:
        buf = io.BytesIO(data)
        try:
            self._read(buf, self.parsed, None)
        except Exception as exc:  # fastavro raises many kinds (EOFError, ValueError, IndexError, ...)
            raise MessageInvalid(f"the data is not Avro binary of this schema ({type(exc).__name__})") from None
        if buf.tell() != len(data):
            raise MessageInvalid(f"{len(data) - buf.tell()} bytes follow the Avro value")


def _fail(path: str, expected: str, value: Any) -> MessageInvalid:
    shown = type(value).__name__ if not isinstance(value, (dict, list)) else ("object" if isinstance(value, dict)
                                                                            else "array")
    return MessageInvalid(f"{path}: expected {expected}, got {shown}")


def _fullname(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


class _Builder:
    """Builds a check function per schema node; named types are registered so references (and recursion)
    resolve to the same function."""

    def __init__(self) -> None:
        self.named: dict[str, Check] = {}

    def build(self, schema: Any, namespace: str) -> Check:
        if isinstance(schema, str):
            return self._reference(schema, namespace)
        if isinstance(schema, list):
            return self._union(schema, namespace)
        kind = schema["type"]
        if kind in ("record", "error"):
            return self._record(schema, namespace)
        if kind in ("enum", "fixed"):
            check = _enum(schema["symbols"]) if kind == "enum" else _fixed(int(schema["size"]))
            self.named[_fullname(schema["name"], schema.get("namespace", namespace))] = check
            return check
        if kind in ("array", "map"):
            inner = self.build(schema["items" if kind == "array" else "values"], namespace)
            return _array(inner) if kind == "array" else _map(inner)
        return self.build(kind, namespace)  # {"type": "string", "logicalType": ...}

    def _reference(self, name: str, namespace: str) -> Check:
        if name in _PRIMITIVES:
            return _PRIMITIVE_CHECKS[name]
        full = _fullname(name, namespace)
        key = full if full in self.named else name

        def check(value: Any, path: str) -> None:  # looked up late: a record may refer to itself
            self.named[key](value, path)

        return check

    def _record(self, schema: dict[str, Any], namespace: str) -> Check:
        ns = schema.get("namespace", namespace)
        full = _fullname(schema["name"], ns)
        if "." in full:
            ns = full.rsplit(".", 1)[0]
        fields: list[tuple[str, bool, Check]] = []

        def check(value: Any, path: str) -> None:
            if not isinstance(value, dict):
                raise _fail(path, f"record {full}", value)
            for name, optional, field_check in fields:
                if name in value:
                    field_check(value[name], f"{path}.{name}")
                elif not optional:
                    raise MessageInvalid(f"{path}: field {name!r} is missing")

        self.named[full] = check
        for field in schema["fields"]:
            fields.append((field["name"], "default" in field, self.build(field["type"], ns)))
        return check

    def _union(self, branches: list[Any], namespace: str) -> Check:
        if not branches:
            raise ValueError("a union needs at least one branch")
        allows_null = "null" in branches
        by_name: dict[str, Check] = {}
        for branch in branches:
            if branch == "null":
                continue
            by_name[self._branch_name(branch, namespace)] = self.build(branch, namespace)
        names = ", ".join(sorted(by_name))

        def check(value: Any, path: str) -> None:
            if value is None:
                if allows_null:
                    return
                raise _fail(path, f"one of {names}", value)
            if not isinstance(value, dict) or len(value) != 1:
                raise _fail(path, f"a union value as {{branch: value}} with a branch of {names}", value)
            [(branch, inner)] = value.items()
            branch_check = by_name.get(branch)
            if branch_check is None:
                raise MessageInvalid(f"{path}: {branch!r} is not a branch of the union ({names})")
            branch_check(inner, f"{path}.{branch}")

        return check

    def _branch_name(self, branch: Any, namespace: str) -> str:
        if isinstance(branch, str):
            return branch if branch in _PRIMITIVES else _fullname(branch, namespace)
        kind = branch["type"]
        if kind in ("record", "error", "enum", "fixed"):
            return _fullname(branch["name"], branch.get("namespace", namespace))
        return str(kind)


def _null(value: Any, path: str) -> None:
    if value is not None:
        raise _fail(path, "null", value)


def _boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise _fail(path, "boolean", value)


def _integer(low: int, high: int, what: str) -> Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and low <= value <= high:
                return
            raise _fail(path, what, value)
        if not low <= value <= high:
            raise MessageInvalid(f"{path}: {value} is out of range for {what}")

    return check


def _number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(path, "a number", value)


def _string(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(path, "string", value)


def _bytes(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(path, "bytes (a string)", value)
    if value and max(value) > "\xff":
        raise MessageInvalid(f"{path}: bytes must be a string of code points 0-255")


_PRIMITIVE_CHECKS: dict[str, Check] = {
    "null": _null, "boolean": _boolean, "int": _integer(*_INT32, "int"), "long": _integer(*_INT64, "long"),
    "float": _number, "double": _number, "bytes": _bytes, "string": _string,
}


def _enum(symbols: list[str]) -> Check:
    allowed = frozenset(symbols)

    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or value not in allowed:
            raise MessageInvalid(f"{path}: expected one of the enum's symbols")

    return check


def _fixed(size: int) -> Check:
    def check(value: Any, path: str) -> None:
        _bytes(value, path)
        if len(value) != size:
            raise MessageInvalid(f"{path}: fixed of {size} bytes, got {len(value)}")

    return check


def _array(items: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise _fail(path, "array", value)
        for i, item in enumerate(value):
            items(item, f"{path}[{i}]")

    return check


def _map(values: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _fail(path, "map (an object)", value)
        for key, item in value.items():
            values(item, f"{path}.{key}")

    return check
