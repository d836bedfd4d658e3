"""The two ways a schema check fails: a definition that does not compile, and a message that does not conform."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.core.errors import InvalidArgument


class DefinitionInvalid(InvalidArgument):
    """A schema definition that does not compile; the message names what is wrong in it."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Could not parse schema definition: {reason}")
        self.reason = reason


class MessageInvalid(InvalidArgument):
    """A message that does not conform to its schema; ``reason`` says where and why (a second dialect can render
    ``index`` and ``reason`` its own way)."""

    def __init__(self, reason: str, index: int | None = None) -> None:
        where = "" if index is None else f" (message {index})"
        super().__init__(f"Could not parse message{where}: {reason}")
        self.reason = reason
        self.index = index

    def at(self, index: int) -> MessageInvalid:
        return MessageInvalid(self.reason, index)


def definition_json(definition: str) -> Any:
    """A definition written in JSON (Avro, JSON Schema), parsed."""
    try:
        return json.loads(definition)
    except (ValueError, RecursionError) as exc:
        raise DefinitionInvalid(f"the definition is not JSON ({exc})") from None


def message_json(data: bytes) -> Any:
    """A message in the JSON encoding, parsed."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise MessageInvalid("the data is not JSON") from None
