"""Protocol Buffer schemas: one ``.proto`` text (core/schemas/proto_text.py) loaded into a descriptor pool of its
own, and messages checked in either encoding against its one top-level message type.

A definition holds exactly one top-level message (nested messages and enums, and top-level enums, are fine).
JSON is proto3 JSON as ``json_format`` reads it (unknown fields refused); BINARY is the wire format, and proto2
``required`` fields must be set.
"""

from __future__ import annotations

from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError, Message

from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid, message_json
from chalicelib.core.schemas.proto_text import read_proto


class ProtoSchema:
    """A compiled Protocol Buffer revision."""

    def __init__(self, definition: str) -> None:
        file = read_proto(definition)
        if len(file.message_type) != 1:
            raise DefinitionInvalid(f"a schema defines exactly one top-level message, found {len(file.message_type)}")
        pool = descriptor_pool.DescriptorPool()
        try:
            pool.AddSerializedFile(file.SerializeToString())
            full_name = f"{file.package}.{file.message_type[0].name}" if file.package else file.message_type[0].name
            self._cls: type[Message] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))
        except (TypeError, KeyError, ValueError) as exc:
            raise DefinitionInvalid(str(exc)[:300]) from None

    @property
    def message_class(self) -> type[Message]:
        """The message type messages are checked against (tests and tools build messages with it)."""
        return self._cls

    def check_json(self, data: bytes) -> None:
        value = message_json(data)
        if not isinstance(value, dict):
            raise MessageInvalid("a message in JSON is an object")
        try:
            message = json_format.ParseDict(value, self._cls())
        except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
            raise MessageInvalid(str(exc).splitlines()[0][:300]) from None
        self._check_required(message)

    def check_binary(self, data: bytes) -> None:
        message = self._cls()
        try:
            message.ParseFromString(data)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise MessageInvalid(f"the data is not this message's wire format ({exc})"[:300]) from None
        self._check_required(message)

    @staticmethod
    def _check_required(message: Message) -> None:
        missing: list[str] = []
        if not message.IsInitialized(missing):
            raise MessageInvalid(f"required fields are missing: {', '.join(missing)[:200]}")
