"""The snapshot methods (``:seek`` is in api/handlers.py): parse, call the use case, return its result."""

from __future__ import annotations

from chalicelib.api import parsing, snapshot_requests
from chalicelib.api import permissions as P
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.methods import Method
from chalicelib.api.references import authorized
from chalicelib.core.names import Name
from chalicelib.core.wire.responses import EMPTY
from chalicelib.runtime import services


def create_snapshot(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, snapshot_requests.create_snapshot_request(incoming.body, name))
    return services().snapshots.create(name, request)


def get_snapshot(name: Name, incoming: Incoming) -> Result:
    return services().snapshots.get(name)


def patch_snapshot(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, snapshot_requests.update_snapshot_request(incoming.body, name))
    return services().snapshots.patch(name, request)


def delete_snapshot(name: Name, incoming: Incoming) -> Result:
    services().snapshots.delete(name)
    return EMPTY


def list_snapshots(project: str, incoming: Incoming) -> Result:
    return services().snapshots.list_project(project, parsing.page_request(incoming.params))


def topic_snapshots(name: Name, incoming: Incoming) -> Result:
    return services().snapshots.list_topic(name, parsing.page_request(incoming.params))


SNAP, PAGE = "snapshots", ("pageSize", "pageToken")
METHODS: tuple[Method, ...] = (
    Method(P.SNAPSHOTS, "GET", "", list_snapshots, P.READ_PROJECT_SUBSCRIPTIONS, "List the project's snapshots",
           "ListSnapshotsResponse", query=PAGE, tag=SNAP),
    Method(P.SNAPSHOT, "PUT", "", create_snapshot, P.PROJECT_ADMIN, "Snapshot a subscription's backlog", "Snapshot",
           body="CreateSnapshotRequest", tag=SNAP),
    Method(P.SNAPSHOT, "GET", "", get_snapshot, P.READ_PROJECT_SUBSCRIPTIONS, "Get a snapshot", "Snapshot", tag=SNAP),
    Method(P.SNAPSHOT, "PATCH", "", patch_snapshot, P.PROJECT_ADMIN,
           "Update a snapshot's labels or (only sooner) expireTime", "Snapshot", body="UpdateSnapshotRequest",
           tag=SNAP),
    Method(P.SNAPSHOT, "DELETE", "", delete_snapshot, P.PROJECT_ADMIN, "Delete a snapshot", tag=SNAP),
    Method(P.TOPIC_SNAPSHOTS, "GET", "", topic_snapshots, P.READ_TOPIC, "Names of the snapshots of a topic",
           "ListTopicSnapshotsResponse", query=PAGE, tag="topics"),
)
