"""What pull, acknowledge and modifyAckDeadline return: typed values that render Google's JSON shapes."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReceivedMessage:
    """One message of a pull response; ``delivery_attempt`` is None when it is not reported."""

    ack_id: str
    message_id: str
    publish_time: str  # RFC 3339, as Google renders it
    data: bytes = b""
    attributes: dict[str, str] = field(default_factory=dict)
    ordering_key: str = ""
    delivery_attempt: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """Google's JSON shape, defaults left out as protobuf JSON does."""
        msg: dict[str, Any] = {"messageId": self.message_id, "publishTime": self.publish_time}
        if self.data:
            msg["data"] = base64.b64encode(self.data).decode()
        if self.attributes:
            msg["attributes"] = self.attributes
        if self.ordering_key:
            msg["orderingKey"] = self.ordering_key
        out: dict[str, Any] = {"ackId": self.ack_id, "message": msg}
        if self.delivery_attempt:
            out["deliveryAttempt"] = self.delivery_attempt
        return out


@dataclass(frozen=True)
class PullResponse:
    received: tuple[ReceivedMessage, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"receivedMessages": [m.to_wire() for m in self.received]} if self.received else {}


@dataclass(frozen=True)
class Empty:
    """The empty response of acknowledge and modifyAckDeadline."""

    def to_wire(self) -> dict[str, Any]:
        return {}
