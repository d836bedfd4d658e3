"""Typed results of the request use cases, each rendering itself as the JSON object of Google's REST API.

Services return these (or the resource models of core/models.py); api/http.py renders anything
with ``to_wire()`` in the JSON dialect the client asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
    """``google.protobuf.Empty``: the answer of delete, detach, modifyPushConfig, acknowledge."""

    def to_wire(self) -> dict[str, Any]:
        return {}


EMPTY = Empty()


@dataclass(frozen=True)
class PublishResponse:
    message_ids: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"messageIds": list(self.message_ids)}


@dataclass(frozen=True)
class MetricsResponse:
    """An AMS ``:metrics`` answer: metric objects in the shape core/usage.py builds them."""

    metrics: tuple[Mapping[str, Any], ...]

    def to_wire(self) -> dict[str, Any]:
        return {"metrics": [dict(m) for m in self.metrics]}
