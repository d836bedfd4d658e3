"""Replay's part of the OpenAPI description: snapshots (api/snapshot_handlers.py), ``:seek`` and Metro's
``:seekStatus`` (api/handlers.py), and AMS's offsets (api/ams/handlers.py; an offset is a publish time in epoch
milliseconds, core/replay/offsets.py), with their component schemas and parameters. api/openapi/description.py and
api/openapi/components.py merge them. These answer the same on the Google and the AMS endpoint.
"""

from __future__ import annotations

from chalicelib.api.openapi.parts import (
             RESOURCE_ID,
             STRING,
             STRING_MAP,
             STRINGS,
             TIMESTAMP,
             Schema,
             array,
             nullable_fields,
             obj,
             ref,
             resource_name,
)

S, SNAP = "subscriptions", "snapshots"

_SNAPSHOT = obj({"name": STRING, "topic": STRING, "expireTime": TIMESTAMP, "labels": STRING_MAP})
_SEEK = obj({"state": {"enum": ["RUNNING", "SUCCEEDED", "SUPERSEDED", "FAILED"]},
             "restoredMessages": {"type": "string", "pattern": "^[0-9]+$"}, "background": {"type": "boolean"},
             "startTime": TIMESTAMP, "endTime": TIMESTAMP, "time": TIMESTAMP, "snapshot": STRING},
            ("state", "restoredMessages", "background", "startTime"))
_OFFSET = {"type": "integer", "description": "a publish time in epoch milliseconds"}

# The examples name what `make fuzz` seeds (bench/fuzz_seed.py).
REQUESTS: dict[str, Schema] = {
    "CreateSnapshotRequest": {
        **obj({"subscription": resource_name("subscriptions"), "labels": STRING_MAP, "tags": STRING_MAP,
               "name": STRING}, ("subscription",)),
        "example": {"subscription": "projects/fuzz-project/subscriptions/fuzz-subscription", "labels": {"k": "v"}}},
    "UpdateSnapshotRequest": {**obj({"snapshot": nullable_fields(_SNAPSHOT), "updateMask": STRING}, ("updateMask",)),
                              "example": {"snapshot": {"labels": {"k": "w"}}, "updateMask": "labels"}},
    "SeekRequest": {**obj({"time": TIMESTAMP, "snapshot": resource_name("snapshots"), "subscription": STRING}),
                    "oneOf": [{"required": ["time"], "properties": {"time": {"type": "string"}}},  # null: unset
                              {"required": ["snapshot"], "properties": {"snapshot": {"type": "string"}}}],
                    "description": "exactly one of time and snapshot",
                    "example": {"snapshot": "projects/fuzz-project/snapshots/fuzz-snapshot"}},
    "ModifyOffsetRequest": obj({"offset": {"anyOf": [_OFFSET, {"type": "string"}]}}, ("offset",)),
}
RESPONSES: dict[str, Schema] = {
    "Snapshot": _SNAPSHOT,
    "ListSnapshotsResponse": obj({"snapshots": array(ref("Snapshot")), "nextPageToken": STRING}),
    "ListTopicSnapshotsResponse": obj({"snapshots": STRINGS, "nextPageToken": STRING}),
    "SeekStatus": obj({"seek": _SEEK}),
    "Offsets": obj({"max": _OFFSET, "min": _OFFSET, "current": _OFFSET}, ("max", "min", "current")),
    "Offset": obj({"offset": _OFFSET}, ("offset",)),
}

PATH_PARAMETERS: dict[str, Schema] = {"snapshot": {**RESOURCE_ID, "example": "fuzz-snapshot"}}
QUERY: dict[str, Schema] = {"time": {**TIMESTAMP, "minLength": 1}}
