"""Resource names: ``projects/{project}/{collection}/{id}`` with Google's rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from chalicelib.core.errors import InvalidArgument

DELETED_TOPIC = "_deleted-topic_"

# The patterns of a resource id and a project id, without anchors (the OpenAPI description states them too).
ID_PATTERN = r"[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}"
PROJECT_PATTERN = r"[A-Za-z0-9][A-Za-z0-9\-_.:]{0,99}"
_ID = re.compile(rf"^{ID_PATTERN}\Z")
_PROJECT = re.compile(rf"^{PROJECT_PATTERN}\Z")

COLLECTIONS = {"topics": "topic", "subscriptions": "subscription", "snapshots": "snapshot", "schemas": "schema"}


@dataclass(frozen=True)
class Name:
    project: str
    collection: str
    id: str

    @property
    def path(self) -> str:
        return f"projects/{self.project}/{self.collection}/{self.id}"

    def __str__(self) -> str:
        return self.path


def check_project(project: str) -> str:
    if not _PROJECT.match(project):
        raise InvalidArgument(f"Invalid project: (project={project})")
    return project


def make(project: str, collection: str, resource_id: str) -> Name:
    """Build and validate a name from its parts (as they arrive in a URL, already percent-decoded)."""
    check_project(project)
    if not _ID.match(resource_id) or resource_id.lower().startswith("goog"):
        raise InvalidArgument(
            f"Invalid [{collection}] name: (name=projects/{project}/{collection}/{resource_id})"
        )
    return Name(project, collection, resource_id)


def parse(path: str, collection: str) -> Name:
    """Parse a full resource name such as ``projects/p/topics/t``."""
    parts = path.split("/") if isinstance(path, str) else []
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != collection:
        raise InvalidArgument(f"Invalid [{collection}] name: (name={path})")
    return make(parts[1], collection, parts[3])
