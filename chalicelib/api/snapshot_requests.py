"""Request bodies of ``:seek`` and the snapshot methods parsed into typed values (core/wire/requests.py)."""

from __future__ import annotations

from typing import Any

from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.timefmt import parse_timestamp
from chalicelib.core.wire.models import CreateSnapshotBody, Snapshot, mask_paths, parse_model
from chalicelib.core.wire.requests import CreateSnapshotRequest, SeekRequest, UpdateSnapshotRequest

SNAPSHOT_UPDATABLE = {"labels": "labels", "expire_time": "expire_time"}


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    return body


def seek_request(body: Any, subscription: Name) -> SeekRequest:
    """``POST .../subscriptions/{s}:seek`` with ``{"time": RFC 3339}`` or ``{"snapshot": name}``."""
    fields = _object(body)
    unknown = set(fields) - {"time", "snapshot", "subscription"}
    if unknown:
        raise InvalidArgument(f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}": Cannot find field.')
    if not isinstance(fields.get("subscription", ""), (str, type(None))):  # the URL names it: a string is ignored
        raise InvalidArgument("Invalid value at 'subscription' (TYPE_STRING)")
    time, snapshot = fields.get("time"), fields.get("snapshot")
    if time is not None and snapshot is not None:
        raise InvalidArgument("Invalid JSON payload received. Only one of time and snapshot may be set.")
    if time is not None:
        return SeekRequest(time=parse_timestamp(time, "time"))
    if snapshot:
        if not isinstance(snapshot, str):
            raise InvalidArgument("Invalid value at 'snapshot' (TYPE_STRING)")
        return SeekRequest(snapshot=names.parse(snapshot, "snapshots"))
    raise InvalidArgument("You must specify either time or snapshot in a Seek request.")


def create_snapshot_request(body: Any, name: Name) -> CreateSnapshotRequest:
    """``PUT projects/{p}/snapshots/{s}`` with ``{"subscription": name, "labels": {...}}``."""
    fields = _object(body)
    fields = {k: v for k, v in fields.items() if k != "name"}
    parsed = parse_model(CreateSnapshotBody, fields, "snapshot")
    if not parsed.subscription:
        raise InvalidArgument("The subscription of the snapshot must be set.")
    return CreateSnapshotRequest(names.parse(parsed.subscription, "subscriptions"), parsed.labels)


def update_snapshot_request(body: Any, name: Name) -> UpdateSnapshotRequest:
    fields = _object(body)
    raw = fields.get("snapshot")
    snapshot = parse_model(Snapshot, {} if raw is None else raw, "snapshot")
    mask = mask_paths(fields.get("updateMask", fields.get("update_mask")), SNAPSHOT_UPDATABLE, "UpdateSnapshotRequest")
    if snapshot.name and snapshot.name != name.path:
        raise InvalidArgument(f"The name in the body ({snapshot.name}) does not match the URL ({name.path}).")
    if "expire_time" in mask and snapshot.expire_time is not None:
        parse_timestamp(snapshot.expire_time, "expire_time")
    return UpdateSnapshotRequest(snapshot, tuple(mask))
