"""Publish validation: the messages of a publish request, checked against Google's limits."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.timefmt import parse_timestamp

_B64 = re.compile(r"^[A-Za-z0-9+/\-_]*={0,2}\Z")


@dataclass(frozen=True)
class NewMessage:
    data: bytes
    attributes: dict[str, str] = field(default_factory=dict)
    ordering_key: str = ""


def decode_data(value: object) -> bytes:
    """Protobuf JSON bytes: standard or URL-safe base64, padding optional."""
    if not isinstance(value, str) or not _B64.match(value):
        raise InvalidArgument("Payload isn't valid for request: message data must be base64-encoded.")
    text = value.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument("Payload isn't valid for request: message data must be base64-encoded.") from None


def _attributes(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument("Invalid value at 'messages.attributes': must be a map of strings")
    if len(value) > limits.MAX_ATTRIBUTES:
        raise InvalidArgument(f"A message can have at most {limits.MAX_ATTRIBUTES} attributes.")
    for k, v in value.items():
        if not isinstance(v, str):
            raise InvalidArgument(f"Invalid value at 'messages.attributes[{k}]': must be a string")
        if not k or len(k.encode()) > limits.MAX_ATTRIBUTE_KEY_BYTES:
            raise InvalidArgument(f"Attribute keys must be 1..{limits.MAX_ATTRIBUTE_KEY_BYTES} bytes: {k[:40]!r}")
        if k.startswith("goog"):
            raise InvalidArgument(f"Attribute keys starting with 'goog' are reserved: {k[:40]!r}")
        if len(v.encode()) > limits.MAX_ATTRIBUTE_VALUE_BYTES:
            raise InvalidArgument(f"Attribute values must be at most {limits.MAX_ATTRIBUTE_VALUE_BYTES} bytes: {k!r}")
    return dict(value)


def _output_only(item: dict[str, Any]) -> None:
    """message_id and publish_time are set by the service and ignored on publish, but must still parse."""
    for camel, snake in (("messageId", "message_id"), ("publishTime", "publish_time")):
        value = item.get(camel, item.get(snake))
        if value is None:
            continue
        if camel == "publishTime":
            parse_timestamp(value, "messages.publish_time")
        elif not isinstance(value, str):
            raise InvalidArgument(f"Invalid value at 'messages.{snake}': must be a string")


_MESSAGE_FIELDS = {"data", "attributes", "messageId", "message_id", "publishTime", "publish_time",
                   "orderingKey", "ordering_key"}


def parse_publish(body: object) -> list[NewMessage]:
    """Validate a PublishRequest body (``{"messages": [...]}``) against Google's limits."""
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    unknown = set(body) - {"messages", "topic"}
    if unknown:
        raise InvalidArgument(f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}": Cannot find field.')
    raw = body.get("messages") or []
    if not isinstance(raw, list):
        raise InvalidArgument("Invalid value at 'messages': must be a list")
    if not raw:
        raise InvalidArgument("No messages to publish")
    if len(raw) > limits.MAX_MESSAGES_PER_PUBLISH:
        raise InvalidArgument(f"A publish request can hold at most {limits.MAX_MESSAGES_PER_PUBLISH} messages.")
    out: list[NewMessage] = []
    total = 0
    for item in raw:
        if not isinstance(item, dict):
            raise InvalidArgument("Invalid value at 'messages': each message must be a JSON object")
        unknown = set(item) - _MESSAGE_FIELDS
        if unknown:
            raise InvalidArgument(f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}" in a message.')
        _output_only(item)
        data = decode_data(item.get("data", ""))
        attrs = _attributes(item.get("attributes"))
        key = item.get("orderingKey", item.get("ordering_key", "")) or ""
        if not isinstance(key, str):
            raise InvalidArgument("Invalid value at 'messages.ordering_key': must be a string")
        if len(key.encode()) > limits.MAX_ORDERING_KEY_BYTES:
            raise InvalidArgument(f"An ordering key must be at most {limits.MAX_ORDERING_KEY_BYTES} bytes.")
        if not data and not attrs:
            raise InvalidArgument("Some messages are empty")
        if len(data) > limits.MAX_MESSAGE_BYTES:
            raise InvalidArgument(f"A message must be at most {limits.MAX_MESSAGE_BYTES} bytes.")
        total += len(data) + sum(len(k.encode()) + len(v.encode()) for k, v in attrs.items()) + len(key.encode())
        out.append(NewMessage(data, attrs, key))
    if total > limits.MAX_REQUEST_BYTES:
        raise InvalidArgument(f"A publish request must be at most {limits.MAX_REQUEST_BYTES} bytes.")
    return out
