"""Snapshots in Google's JSON shape, and the typed requests of seek and the snapshot methods."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, field_validator

from chalicelib.core.models import Wire, _labels
from chalicelib.core.names import Name


class Snapshot(Wire):
    name: str = ""
    topic: str = ""
    expire_time: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    _check_labels = field_validator("labels")(_labels)


class CreateSnapshotBody(Wire):
    subscription: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    tags: dict[str, str] = Field(default_factory=dict)

    _check_labels = field_validator("labels")(_labels)


@dataclass(frozen=True)
class CreateSnapshotRequest:
    subscription: Name
    labels: dict[str, str]


@dataclass(frozen=True)
class UpdateSnapshotRequest:
    """A snapshot patch: the fields named by ``update_mask`` are taken from ``snapshot``."""

    snapshot: Snapshot
    update_mask: tuple[str, ...]


@dataclass(frozen=True)
class SeekRequest:
    """``:seek``: exactly one of ``time`` (epoch seconds) and ``snapshot``."""

    time: float | None = None
    snapshot: Name | None = None


@dataclass(frozen=True)
class SeekResponse:
    """Google's SeekResponse is empty."""

    def to_wire(self) -> dict[str, object]:
        return {}
