"""The JSON Schema keywords Metro evaluates itself, and the work every keyword spends.

jsonschema (draft 2020-12) stays the validator. These replace its keywords that match a definition's patterns
with Python's backtracking ``re`` (``pattern``, ``patternProperties``, ``additionalProperties``,
``unevaluatedProperties``), compare values pairwise (``enum``, and ``uniqueItems``, quadratic in the array), or
gather evaluated keys and indexes in lists (``unevaluatedProperties``, ``unevaluatedItems``). Patterns are RE2's,
compiled with the definition (core/schemas/regex.py); values compare by a hashable key.

Every keyword, replaced or not, is wrapped by :func:`counted`: it spends a unit of the budget in force
(core/schemas/budget.py) per evaluation and a unit per ERROR_CHARS_PER_UNIT characters of each error it reports
(jsonschema writes the failing value into its messages, so the errors a check keeps are bounded too); a pattern
match spends its RE2 cost, a value key a unit per eight values.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from jsonschema.exceptions import ValidationError

from chalicelib.core.schemas import budget
from chalicelib.core.schemas.limits import ERROR_CHARS_PER_UNIT
from chalicelib.core.schemas.regex import Pattern, compile_pattern

Keyword = Callable[[Any, Any, Any, Any], Iterable[ValidationError] | None]  # (validator, value, instance, schema)
_BOOL, _NUMBER, _STRING, _NULL, _ARRAY, _OBJECT = range(6)


@dataclass(frozen=True)
class Lookups:
    """What a definition's keywords look up while a message is checked: its compiled patterns by their text, the
    keys of each of its enums by the enum list's ``id``."""

    patterns: Mapping[str, Pattern] = field(default_factory=dict)
    enums: Mapping[int, frozenset[Hashable]] = field(default_factory=dict)


_NONE = Lookups()
in_use: ContextVar[Lookups | None] = ContextVar("metro_json_lookups", default=None)  # set around a check


def value_key(value: Any) -> Hashable:
    """A key that two JSON values share exactly when JSON Schema calls them equal (1 and 1.0 are, true and 1 are
    not, objects regardless of key order)."""
    if value is True or value is False:
        return _BOOL, value
    if isinstance(value, (int, float)):
        return _NUMBER, value
    if isinstance(value, str):
        return _STRING, value
    if isinstance(value, list):
        budget.spend(1 + len(value) // 8)
        return _ARRAY, tuple(value_key(item) for item in value)
    if isinstance(value, dict):
        budget.spend(1 + len(value) // 8)
        return _OBJECT, frozenset((key, value_key(item)) for key, item in value.items())
    return (_NULL,)


def counted(keyword: Keyword) -> Keyword:
    """``keyword`` spending a unit per evaluation and per ERROR_CHARS_PER_UNIT characters of each error."""
    def evaluate(validator: Any, value: Any, instance: Any, schema: Any) -> Iterable[ValidationError] | None:
        spending = budget.current()
        if spending is not None:
            spending.spend(1)
        errors = keyword(validator, value, instance, schema)
        return None if errors is None else _charged(errors)

    evaluate.__name__ = getattr(keyword, "__name__", "keyword")
    return evaluate


def _charged(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    for error in errors:
        if not getattr(error, "_metro_charged", False):  # an error passes up through every enclosing keyword
            error._metro_charged = True
            budget.spend(1 + len(error.message) // ERROR_CHARS_PER_UNIT)
        yield error


def _repr() -> reprlib.Repr:
    short = reprlib.Repr()  # attributes, not keywords: Python 3.11's Repr takes none
    short.maxlevel, short.maxdict, short.maxlist, short.maxstring, short.maxother = 3, 5, 5, 80, 80
    return short


_REPR = _repr()


def shown(value: Any) -> str:
    """``repr(value)`` cut short: an error message never copies a whole message or enum."""
    return _REPR.repr(value)


def _search(source: str, text: str) -> bool:
    pattern = (in_use.get() or _NONE).patterns.get(source) or compile_pattern(source, "a pattern")
    budget.spend(pattern.cost(text))
    return pattern.search(text)


def _valid(errors: Iterable[ValidationError]) -> bool:
    return next(iter(errors), None) is None


def _extras(extras: list[Any]) -> str:
    """jsonschema's phrase for extra keys or items: "'a', 'b' were"."""
    return ", ".join(shown(extra) for extra in extras) + (" was" if len(extras) == 1 else " were")


def pattern(validator: Any, source: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(source, instance):
        yield ValidationError(f"{shown(instance)} does not match {source!r}")


def pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
                       ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for source, subschema in patterns.items():
        for key, value in instance.items():
            if _search(source, key):
                yield from validator.descend(value, subschema, path=key, schema_path=source)


def additional_properties(validator: Any, additional: Any, instance: Any, schema: Any
                          ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = [key for key in instance if key not in properties and not any(_search(p, key) for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(shown(extra) for extra in sorted(extras))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: "
                                  + ", ".join(repr(each) for each in sorted(patterns)))
        else:
            yield ValidationError(f"Additional properties are not allowed ({_extras(sorted(extras))} unexpected)")


def enum(validator: Any, enums: list[Any], instance: Any, schema: Any) -> Iterator[ValidationError]:
    allowed = (in_use.get() or _NONE).enums.get(id(enums))
    if allowed is None:
        allowed = frozenset(value_key(each) for each in enums)
    if value_key(instance) not in allowed:
        yield ValidationError(f"{shown(instance)} is not one of {shown(enums)}")


def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Hashable] = set()
    for item in instance:
        key = value_key(item)
        if key in seen:
            yield ValidationError(f"{shown(instance)} has non-unique elements")
            return
        seen.add(key)


def unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any
                           ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failing = [key for key in instance if key not in evaluated
               and not _valid(validator.descend(instance[key], unevaluated, path=key, schema_path=key))]
    if failing and unevaluated is False:
        yield ValidationError(f"Unevaluated properties are not allowed ({_extras(sorted(failing))} unexpected)")
    elif failing:
        yield ValidationError("Unevaluated properties are not valid under the given schema "
                              f"({_extras(failing)} unevaluated and invalid)")


def unevaluated_items(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "array"):
        return
    evaluated = _evaluated_indexes(validator, instance, schema)
    failing = [item for index, item in enumerate(instance) if index not in evaluated]
    if failing:
        yield ValidationError(f"Unevaluated items are not allowed ({_extras(failing)} unexpected)")


def _referenced(validator: Any, schema: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """(the validator at the target, the target) of the schema's ``$ref`` and ``$dynamicRef``."""
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            yield validator.evolve(schema=resolved.contents, _resolver=resolved.resolver), resolved.contents


def _conditional(validator: Any, instance: Any, schema: dict[str, Any]) -> list[Any]:
    """The subschemas of ``if``/``then``/``else`` that apply to ``instance``."""
    if "if" not in schema:
        return []
    if validator.evolve(schema=schema["if"]).is_valid(instance):
        return [schema["if"]] + ([schema["then"]] if "then" in schema else [])
    return [schema["else"]] if "else" in schema else []


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates (for ``unevaluatedProperties``), as jsonschema finds
    them, with sets and RE2."""
    budget.spend(1)
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for target_validator, target in _referenced(validator, schema):
        keys |= _evaluated_keys(target_validator, instance, target)
    if validator.is_type(properties := schema.get("properties"), "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is not None:
            keys.update(key for key, value in instance.items() if _valid(validator.descend(value, subschema)))
    patterns = list(schema.get("patternProperties", {}))
    keys.update(key for key in instance if any(_search(p, key) for p in patterns))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    for subschema in _conditional(validator, instance, schema):
        keys |= _evaluated_keys(validator, instance, subschema)
    return keys


def _evaluated_indexes(validator: Any, instance: list[Any], schema: Any) -> set[int]:
    """The indexes of ``instance`` that ``schema`` evaluates (for ``unevaluatedItems``), as jsonschema finds
    them, with sets."""
    budget.spend(1)
    if validator.is_type(schema, "boolean"):
        return set()
    if "items" in schema:
        return set(range(len(instance)))
    indexes: set[int] = set()
    for target_validator, target in _referenced(validator, schema):
        indexes |= _evaluated_indexes(target_validator, instance, target)
    indexes.update(range(len(schema.get("prefixItems", []))))
    for subschema in _conditional(validator, instance, schema):
        indexes |= _evaluated_indexes(validator, instance, subschema)
    for keyword in ("contains", "unevaluatedItems"):
        if keyword in schema:
            check = validator.evolve(schema=schema[keyword])
            indexes.update(index for index, item in enumerate(instance) if check.is_valid(item))
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                indexes |= _evaluated_indexes(validator, instance, subschema)
    return indexes


REPLACED: dict[str, Keyword] = {
    "pattern": pattern, "patternProperties": pattern_properties, "additionalProperties": additional_properties,
    "enum": enum, "uniqueItems": unique_items, "unevaluatedProperties": unevaluated_properties,
    "unevaluatedItems": unevaluated_items,
}
