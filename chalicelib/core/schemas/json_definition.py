"""A JSON Schema definition read as data before it is compiled: what it refers to, its patterns, its size.

Nothing a definition says makes Metro read a file or the network. ``$ref`` and ``$dynamicRef`` must resolve to a
schema inside the definition: its root, a JSON pointer, an anchor, or an embedded resource with an ``$id`` of its
own; a reference to anything else (``http:``, ``https:``, ``file:``, a relative ``other.json``, a meta-schema)
refuses the definition, and the validator resolves over a registry of the definition's own resources that
retrieves nothing.

The walk also compiles every pattern with RE2, bounds subschemas, patterns and enums, and refuses in-place
applicators (``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``dependentSchemas``, ``$ref``,
``$dynamicRef``) that loop without descending into the message or fan out past MAX_IN_PLACE_FANOUT subschemas
for one value. ``$schema`` may only name a published draft; whichever it names, the definition is read as draft
2020-12, and the walk removes it (jsonschema would otherwise pick its own validator class by it, without Metro's
keywords).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from chalicelib.core.schemas.invalid import DefinitionInvalid
from chalicelib.core.schemas.json_keywords import Lookups, value_key
from chalicelib.core.schemas.limits import (
    MAX_ENUM_VALUES,
    MAX_IN_PLACE_FANOUT,
    MAX_JSON_SCHEMA_NODES,
    MAX_PATTERNS,
)
from chalicelib.core.schemas.regex import Pattern, compile_pattern

if TYPE_CHECKING:
    from referencing._core import Resolver  # the package exports no name for it

DRAFT = "https://json-schema.org/draft/2020-12/schema"
# $schema may name a published draft; whichever it names, the definition is read as draft 2020-12.
DRAFTS = frozenset({"http://json-schema.org/draft-03/schema", "http://json-schema.org/draft-04/schema",
                    "http://json-schema.org/draft-06/schema", "http://json-schema.org/draft-07/schema",
                    "https://json-schema.org/draft/2019-09/schema", DRAFT})
# Where draft 2020-12 keeps subschemas (the same tables as the referencing package's).
_ONE = ("additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then",
        "unevaluatedItems", "unevaluatedProperties")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")
_IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"})


@dataclass(frozen=True)
class ReadDefinition:
    """A definition that passed the walk: its registry (nothing to retrieve) and what its keywords look up."""

    registry: Registry[Any]
    lookups: Lookups


def subschemas(node: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(keyword, path within ``node``, subschema) of each subschema directly in ``node``."""
    for keyword in _ONE:
        if keyword in node:
            yield keyword, keyword, node[keyword]
    for keyword in _LIST:
        if isinstance(children := node.get(keyword), list):
            yield from ((keyword, f"{keyword}/{i}", child) for i, child in enumerate(children))
    for keyword in _MAP:
        if isinstance(children := node.get(keyword), dict):
            yield from ((keyword, f"{keyword}/{name}", child) for name, child in children.items())


def check_size(raw: Any) -> None:
    """At most MAX_JSON_SCHEMA_NODES subschemas, counted before the (slower) meta-validation."""
    count, stack = 0, [raw]
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_JSON_SCHEMA_NODES:
            raise DefinitionInvalid(f"a JSON Schema may hold at most {MAX_JSON_SCHEMA_NODES} subschemas")
        if isinstance(node, dict):
            stack.extend(child for _, _, child in subschemas(node))


def read_definition(raw: Any) -> ReadDefinition:
    """Walk a meta-validated definition; DefinitionInvalid names the first thing it may not hold."""
    return _Walk(raw).run()


class _Walk:
    """Every subschema reachable from the root (through subschema keywords and references), each once."""

    def __init__(self, raw: Any) -> None:
        root = DRAFT202012.create_resource(raw)
        self.registry: Registry[Any] = Registry().with_resource(root.id() or "", root).crawl()
        self.stack: list[tuple[Any, Resolver[Any], str, bool]] = [
            (raw, self.registry.resolver_with_root(root), "(root)", False)]
        self.seen: dict[int, tuple[dict[str, Any], str]] = {}  # id -> (subschema, its path)
        self.in_place: dict[int, list[Any]] = {}  # id -> the subschemas it applies to the same value
        self.patterns: dict[str, Pattern] = {}
        self.enums: dict[int, frozenset[Hashable]] = {}

    def run(self) -> ReadDefinition:
        while self.stack:
            self._visit(*self.stack.pop())
        _check_in_place(self.seen, self.in_place)
        for node, _ in self.seen.values():
            node.pop("$schema", None)  # checked above: without it, jsonschema keeps Metro's validator class
        return ReadDefinition(self.registry, Lookups(self.patterns, self.enums))

    def _visit(self, node: Any, resolver: Resolver[Any], path: str, enters: bool) -> None:
        if not isinstance(node, dict) or id(node) in self.seen:
            return
        self.seen[id(node)] = (node, path)
        if enters:  # a subschema with an $id of its own moves the base URI (a reference's target has moved it)
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        applied = self.in_place.setdefault(id(node), [])
        for keyword in ("$ref", "$dynamicRef"):
            if isinstance(ref := node.get(keyword), str):
                target, at = _resolve(resolver, ref, f"{path}/{keyword}")
                applied.append(target)
                self.stack.append((target, at, f"{path}/{keyword}", False))
        for keyword, where, child in subschemas(node):
            if keyword in _IN_PLACE:
                applied.append(child)
            self.stack.append((child, resolver, f"{path}/{where}", True))
        self._check(node, path)

    def _check(self, node: dict[str, Any], path: str) -> None:
        dialect = node.get("$schema")
        if dialect is not None and (not isinstance(dialect, str) or dialect.rstrip("#") not in DRAFTS):
            raise DefinitionInvalid(f"{path}: $schema is {str(dialect)[:80]!r}; it may only name a published draft "
                                    f"(the definition is read as draft 2020-12, {DRAFT})")
        if isinstance(source := node.get("pattern"), str):
            self._pattern(source, f"{path}/pattern")
        for source in node.get("patternProperties") or {}:
            self._pattern(source, f"{path}/patternProperties")
        if isinstance(values := node.get("enum"), list):
            if len(values) > MAX_ENUM_VALUES:
                raise DefinitionInvalid(f"{path}/enum: an enum may hold at most {MAX_ENUM_VALUES} values")
            self.enums[id(values)] = frozenset(value_key(value) for value in values)

    def _pattern(self, source: str, where: str) -> None:
        if source in self.patterns:
            return
        if len(self.patterns) == MAX_PATTERNS:
            raise DefinitionInvalid(f"{where}: a JSON Schema may hold at most {MAX_PATTERNS} distinct patterns")
        self.patterns[source] = compile_pattern(source, where)


def _resolve(resolver: Resolver[Any], ref: str, where: str) -> tuple[Any, Resolver[Any]]:
    """The subschema ``ref`` names inside the definition, and the resolver at it."""
    try:
        resolved = resolver.lookup(ref)
    except (Unresolvable, LookupError, ValueError, TypeError, AttributeError):
        raise DefinitionInvalid(f"{where}: {ref[:200]!r} is not in the definition; a schema may refer only to "
                                "itself ($defs, JSON pointers, anchors, embedded $id): nothing is fetched"
                                ) from None
    if not isinstance(resolved.contents, (dict, bool)):
        raise DefinitionInvalid(f"{where}: {ref[:200]!r} does not point at a schema")
    return resolved.contents, resolved.resolver


def _check_in_place(seen: dict[int, tuple[dict[str, Any], str]], in_place: dict[int, list[Any]]) -> None:
    """No loop of in-place applicators, and at most MAX_IN_PLACE_FANOUT subschemas met by one value from any
    subschema (counted with repetition: two references to one subschema count it twice). No recursion."""
    fanout: dict[int, int] = {}  # id -> subschemas met from it, itself included, capped past the limit
    for start in in_place:
        if start in fanout:
            continue
        on_path, stack = {start}, [(start, 0)]
        while stack:
            node, next_child = stack[-1]
            children = in_place.get(node, [])
            if next_child < len(children):
                stack[-1] = (node, next_child + 1)
                child = children[next_child]
                if not isinstance(child, dict) or id(child) in fanout:
                    continue
                if id(child) in on_path:
                    raise DefinitionInvalid(f"{seen[id(child)][1]}: refers back to itself without descending "
                                            "into the message, so checking would never end")
                on_path.add(id(child))
                stack.append((id(child), 0))
                continue
            stack.pop()
            on_path.discard(node)
            total = 1 + sum(fanout[id(c)] if isinstance(c, dict) else 1 for c in children)
            fanout[node] = min(total, MAX_IN_PLACE_FANOUT + 1)
            if total > MAX_IN_PLACE_FANOUT:
                raise DefinitionInvalid(f"{seen[node][1]}: a value would be checked against more than "
                                        f"{MAX_IN_PLACE_FANOUT} subschemas (allOf, anyOf, oneOf, $ref, ... fan out)")
