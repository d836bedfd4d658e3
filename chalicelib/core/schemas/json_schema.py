"""JSON Schema (draft 2020-12, the jsonschema package), as AMS offers it for message payloads.

Messages are JSON in either encoding (BINARY means the same UTF-8 JSON text). Formats are annotations only, as
the draft specifies by default. A failing message names the first error jsonschema ranks best: where in the
document and which keyword failed.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid, definition_json, message_json


class JsonSchema:
    """A compiled JSON Schema revision."""

    def __init__(self, definition: str) -> None:
        raw = definition_json(definition)
        if not isinstance(raw, (dict, bool)):
            raise DefinitionInvalid("a JSON Schema is an object or a boolean")
        try:
            Draft202012Validator.check_schema(raw)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            raise DefinitionInvalid(f"not a valid JSON Schema (draft 2020-12) at {where}: {exc.message}") from None
        self._validator = Draft202012Validator(raw)

    def check_json(self, data: bytes) -> None:
        self.check_value(message_json(data))

    check_binary = check_json

    def check_value(self, value: Any) -> None:
        if self._validator.is_valid(value):
            return
        error = best_match(self._validator.iter_errors(value))
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise MessageInvalid(f"{where}: {error.message[:300]} ({error.validator})")
