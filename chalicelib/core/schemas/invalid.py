"""The two ways a schema check fails: a definition that does not compile, and a message that does not conform."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.schemas.limits import MAX_DEFINITION_DEPTH


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
    """A definition written in JSON (Avro, JSON Schema), parsed, and nested at most MAX_DEFINITION_DEPTH deep."""
    try:
        value = json.loads(definition)
    except (ValueError, RecursionError) as exc:
        raise DefinitionInvalid(f"the definition is not JSON ({exc})") from None
    if json_depth(value) > MAX_DEFINITION_DEPTH:
        raise DefinitionInvalid(f"the definition is nested too deeply (at most {MAX_DEFINITION_DEPTH} levels of "
                                "objects and arrays)")
    return value


def json_depth(value: Any) -> int:
    """How deep objects and arrays nest in a parsed JSON value (a scalar is 0); no recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def message_json(data: bytes) -> Any:
    """A message in the JSON encoding, parsed."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise MessageInvalid("the data is not JSON") from None
