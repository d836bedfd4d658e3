"""Snapshots in Google's JSON shape, and the typed requests of seek and the snapshot methods."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, field_validator

from chalicelib.core.models import Wire, _labels
from chalicelib.core.names import Name
from chalicelib.core.references import CONSUME_SUBSCRIPTION, OUTPUT_ONLY, READ_SNAPSHOT, URL_NAME


class Snapshot(Wire):
    name: Annotated[str, URL_NAME] = ""
    topic: Annotated[str, OUTPUT_ONLY] = ""
    expire_time: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    _check_labels = field_validator("labels")(_labels)


class CreateSnapshotBody(Wire):
    subscription: Annotated[str, CONSUME_SUBSCRIPTION] = ""
    labels: dict[str, str] = Field(default_factory=dict)
    tags: dict[str, str] = Field(default_factory=dict)

    _check_labels = field_validator("labels")(_labels)


@dataclass(frozen=True)
class CreateSnapshotRequest:
    subscription: Annotated[Name, CONSUME_SUBSCRIPTION]
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
    snapshot: Annotated[Name | None, READ_SNAPSHOT] = None


@dataclass(frozen=True)
class SeekResponse:
    """Google's SeekResponse is empty."""

    def to_wire(self) -> dict[str, object]:
        return {}
