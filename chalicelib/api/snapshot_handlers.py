"""The snapshot methods (``:seek`` is in api/handlers.py): parse, call the use case, return its result."""

from __future__ import annotations

from collections.abc import Mapping

from chalicelib.api import requests, snapshot_requests
from chalicelib.api.handlers import CollectionHandler, Handler, Incoming, Result
from chalicelib.api.references import authorized
from chalicelib.core.names import Name
from chalicelib.core.responses import EMPTY
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
    return services().snapshots.list_project(project, requests.page_request(incoming.params))


def topic_snapshots(name: Name, incoming: Incoming) -> Result:
    return services().snapshots.list_topic(name, requests.page_request(incoming.params))


SNAPSHOT: Mapping[tuple[str, str], Handler] = {
    ("PUT", ""): create_snapshot,
    ("GET", ""): get_snapshot,
    ("PATCH", ""): patch_snapshot,
    ("DELETE", ""): delete_snapshot,
}
SNAPSHOTS: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): list_snapshots}
TOPIC_SNAPSHOTS: Mapping[tuple[str, str], Handler] = {("GET", ""): topic_snapshots}
