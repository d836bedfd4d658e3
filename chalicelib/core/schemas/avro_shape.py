"""What an Avro schema's shape may be, checked on fastavro's parsed form (full names, each named type defined at
its first use and referred to by name after).

fastavro never reads a file or the network to parse a definition: a name it does not know is an error, and named
types do not outlive one parse. What a definition can do is make a small message expensive, so three shapes are
bounded here:

- an enum holds at most MAX_ENUM_VALUES symbols;
- a record that always contains itself (through fields alone, with no union, array or map to end it) has no
  finite value, and is refused;
- an array whose items take no bytes (null, a fixed of size 0, a record of such fields) is refused: a five-byte
  message could announce 2**62 such items, and reading them would never end (ten million took 3 s and 1 GB).

Whether a named type refers to itself (a recursive schema) is reported: fastavro's compiled reader recurses in C,
where a message nesting a recursive type 100,000 times overflows the stack and kills the process, so such a
schema's messages are read with fastavro's Python reader, which stops at Python's recursion limit.
"""

from __future__ import annotations

from typing import Any

from chalicelib.core.schemas.invalid import DefinitionInvalid
from chalicelib.core.schemas.limits import MAX_ENUM_VALUES

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def read_shape(parsed: Any) -> bool:
    """Whether the schema is recursive; DefinitionInvalid for a shape it may not have."""
    shape = _Shape()
    shape.walk(parsed)
    shape.check_finite()
    for items in shape.arrays:
        if shape.takes_no_bytes(items):
            raise DefinitionInvalid("an array's items must take at least a byte in Avro binary (not null, a fixed "
                                    "of size 0, or a record of only such fields)")
    return shape.recursive


class _Shape:
    """The named types of a schema, the items of its arrays, and whether a named type refers to itself."""

    def __init__(self) -> None:
        self.named: dict[str, dict[str, Any]] = {}
        self.open: set[str] = set()  # the records being walked (a reference to one of them is recursion)
        self.arrays: list[Any] = []
        self.recursive = False

    def walk(self, schema: Any) -> None:
        if isinstance(schema, str):
            self.recursive = self.recursive or schema in self.open
        elif isinstance(schema, list):
            for branch in schema:
                self.walk(branch)
        elif isinstance(schema, dict):
            self._walk_node(schema)

    def _walk_node(self, schema: dict[str, Any]) -> None:
        kind = schema.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            self.named[str(schema.get("name"))] = schema
        if kind == "enum" and len(schema.get("symbols", ())) > MAX_ENUM_VALUES:
            raise DefinitionInvalid(f"an enum may hold at most {MAX_ENUM_VALUES} symbols")
        if kind in ("record", "error"):
            name = str(schema.get("name"))
            self.open.add(name)
            for field in schema.get("fields", ()):
                self.walk(field.get("type"))
            self.open.discard(name)
        elif kind == "array":
            self.arrays.append(schema.get("items"))
            self.walk(schema.get("items"))
        elif kind == "map":
            self.walk(schema.get("values"))
        elif isinstance(kind, (dict, list)):
            self.walk(kind)

    def _record(self, schema: Any) -> dict[str, Any] | None:
        """The record ``schema`` is or names, if it is one."""
        if isinstance(schema, str):
            schema = self.named.get(schema)
        return schema if isinstance(schema, dict) and schema.get("type") in ("record", "error") else None

    def check_finite(self) -> None:
        """No record that contains itself through its fields alone (no recursion: an explicit stack)."""
        done: set[str] = set()
        for start in [n for n, s in self.named.items() if self._record(s) is not None]:
            on_path, stack = {start}, [(start, 0)]
            while stack:
                name, index = stack[-1]
                fields = self.named[name].get("fields", ())
                if index == len(fields):
                    stack.pop()
                    on_path.discard(name)
                    done.add(name)
                    continue
                stack[-1] = (name, index + 1)
                inner = self._record(fields[index].get("type"))
                if inner is None or str(inner.get("name")) in done:
                    continue
                inner_name = str(inner.get("name"))
                if inner_name in on_path:
                    raise DefinitionInvalid(f"record {inner_name} always contains itself (no union, array or map "
                                            "ends it): it has no finite value")
                on_path.add(inner_name)
                stack.append((inner_name, 0))

    def takes_no_bytes(self, schema: Any) -> bool:
        """Whether every value of ``schema`` is written as no bytes at all (records are finite by now)."""
        record = self._record(schema)
        if record is not None:
            return all(self.takes_no_bytes(field.get("type")) for field in record.get("fields", ()))
        if isinstance(schema, str):
            schema = self.named.get(schema, schema)
        if isinstance(schema, str):
            return schema == "null"
        kind = schema.get("type") if isinstance(schema, dict) else None
        if kind == "fixed":
            return bool(schema.get("size") == 0)
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return kind == "null"
        if isinstance(kind, dict) or (isinstance(kind, str) and kind not in ("enum", "array", "map")):
            return self.takes_no_bytes(kind)  # {"type": {...}} or {"type": "a.Name"}
        return False  # a union writes its branch's index; an enum, an array or a map at least a byte
