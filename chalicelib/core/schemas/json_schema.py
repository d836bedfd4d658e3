"""JSON Schema (draft 2020-12, the jsonschema package), as AMS offers it for message payloads.

Messages are JSON in either encoding (BINARY means the same UTF-8 JSON text). Formats are annotations only, as
the draft specifies by default. A failing message names the first error jsonschema ranks best: where in the
document and which keyword failed.

A definition is data (docs/schemas.md): it is meta-validated, then walked (core/schemas/json_definition.py) so
that it refers only to itself, its patterns compile with RE2 and its size is bounded; the validator resolves
references over the definition's own registry, which retrieves nothing, and evaluates patterns, enums and
unique items with Metro's keywords (core/schemas/json_keywords.py), every keyword spending from the check's work
budget (core/schemas/budget.py).
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, best_match
from referencing.exceptions import Unresolvable

from chalicelib.core.schemas import budget, json_keywords
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid, definition_json, message_json
from chalicelib.core.schemas.json_definition import check_size, read_definition


def _validator_class() -> Any:
    """Draft 2020-12 with every keyword counted, and Metro's keywords in place of the replaced ones."""
    keywords = {**Draft202012Validator.VALIDATORS, **json_keywords.REPLACED}
    return validators.extend(Draft202012Validator, {name: json_keywords.counted(fn) for name, fn in keywords.items()})


_VALIDATOR = _validator_class()


class JsonSchema:
    """A compiled JSON Schema revision."""

    def __init__(self, definition: str) -> None:
        raw = definition_json(definition)
        if not isinstance(raw, (dict, bool)):
            raise DefinitionInvalid("a JSON Schema is an object or a boolean")
        check_size(raw)
        try:  # no format checks: they would run Python regular expressions over the definition's strings
            Draft202012Validator.check_schema(raw, format_checker=None)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            raise DefinitionInvalid(f"not a valid JSON Schema (draft 2020-12) at {where}: {exc.message}") from None
        read = read_definition(raw)
        self._lookups = read.lookups
        self._validator = _VALIDATOR(raw, registry=read.registry)

    def check_json(self, data: bytes) -> None:
        with budget.ensured(len(data)):
            self.check_value(message_json(data))

    check_binary = check_json

    def check_value(self, value: Any) -> None:
        """MessageInvalid unless ``value`` conforms; spends from the budget in force (one of the base allowance
        when none is)."""
        token = json_keywords.in_use.set(self._lookups)
        try:
            with budget.ensured(0) as spending:
                self._check(value, spending.limit)
        finally:
            json_keywords.in_use.reset(token)

    def _check(self, value: Any, limit: int) -> None:
        try:
            if self._validator.is_valid(value):
                return
            error = best_match(self._validator.iter_errors(value))
        except budget.OverBudget:
            raise MessageInvalid(f"checking the message against this schema needs more than {limit} units of "
                                 "work") from None
        except Unresolvable:  # the walk resolved every reference; kept so that none could ever be fetched
            raise MessageInvalid("the schema refers to a schema it does not hold") from None
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise MessageInvalid(f"{where}: {error.message[:300]} ({error.validator})")
