"""Typed results of the request use cases, each rendering itself as the JSON object of Google's REST API.

Services return these (or the resource models of core/wire/models.py); api/http.py renders anything
with ``to_wire()`` in the JSON dialect the client asked for.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)
U = TypeVar("U")


class ToWire(Protocol):
    """A typed value that renders itself as a JSON object of Google's REST API."""

    def to_wire(self) -> dict[str, Any]: ...


Listed = ToWire | str  # what a list response holds: resources, or bare resource names


@dataclass(frozen=True)
class Page(Generic[T_co]):
    """One page of a list call: ``field`` is the response's list field (``topics``, ``subscriptions``),
    ``next_page_token`` is empty on the last page."""

    field: str
    items: tuple[T_co, ...]
    next_page_token: str = ""

    def map(self, convert: Callable[[T_co], U]) -> Page[U]:
        return Page(self.field, tuple(convert(item) for item in self.items), self.next_page_token)

    def to_wire(self: Page[Listed]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.items:  # proto3 JSON leaves out empty lists and strings
            out[self.field] = [item if isinstance(item, str) else item.to_wire() for item in self.items]
        if self.next_page_token:
            out["nextPageToken"] = self.next_page_token
        return out


@dataclass(frozen=True)
class Empty:
    """``google.protobuf.Empty``: the answer of delete, detach, modifyPushConfig, acknowledge,
    modifyAckDeadline."""

    def to_wire(self) -> dict[str, Any]:
        return {}


EMPTY = Empty()


@dataclass(frozen=True)
class PublishResponse:
    message_ids: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"messageIds": list(self.message_ids)}


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
class SeekResponse:
    """Google's SeekResponse is empty."""

    def to_wire(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class MetricsResponse:
    """An AMS ``:metrics`` answer: metric objects in the shape core/usage.py builds them."""

    metrics: tuple[Mapping[str, Any], ...]

    def to_wire(self) -> dict[str, Any]:
        return {"metrics": [dict(m) for m in self.metrics]}


@dataclass(frozen=True)
class ServiceStatus:
    """The service's health as ``GET /v1/status`` reports it: AMS's shape, and which stores failed their probe."""

    failing: tuple[str, ...] = ()  # the stores that failed their probe (store/health.py), by name

    @property
    def healthy(self) -> bool:
        return not self.failing

    @property
    def problem(self) -> str:
        return f"Metro cannot use its storage: {', '.join(self.failing)} failed a probe (see the service's log)."

    def to_wire(self) -> dict[str, Any]:
        """AMS's answer: Metro has no push servers to report, push runs as Lambda functions fed by the queues."""
        return {"status": "ok" if self.healthy else "unhealthy", "push_functionality": "enabled",
                "push_servers": []}
