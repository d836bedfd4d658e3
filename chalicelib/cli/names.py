"""Resource names: a short id (``orders``) is resolved against the project, a full name
(``projects/p/topics/orders``, or AMS's ``/projects/p/topics/orders``) is taken as it is."""

from __future__ import annotations

import re

COLLECTIONS = ("topics", "subscriptions", "snapshots", "schemas")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~+%-]*$")


class BadName(ValueError):
    """A name the CLI cannot turn into a resource name (a usage error)."""


def project_path(project: str | None) -> str:
    """``projects/{project}``; a usage error without a project."""
    if not project:
        raise BadName("no project: pass --project, set METRO_PROJECT or run `metro login --project ...`")
    if not _ID.match(project):
        raise BadName(f"not a project id: {project!r}")
    return f"projects/{project}"


def resolve(value: str, project: str | None, collection: str) -> str:
    """The full name of ``value`` in ``collection`` (``topics``, ``subscriptions``, ...)."""
    text = value.strip()
    if text.startswith("/projects/"):
        text = text[1:]
    if text.startswith("projects/"):
        parts = text.split("/")
        if len(parts) != 4 or parts[2] != collection or not _ID.match(parts[1]) or not _ID.match(parts[3]):
            raise BadName(f"not a name of {collection}: {value!r} (expected projects/PROJECT/{collection}/ID)")
        return text
    if not _ID.match(text):
        raise BadName(f"not an id or a name of {collection}: {value!r}")
    return f"{project_path(project)}/{collection}/{text}"


def short(name: str) -> str:
    """The id at the end of a full name."""
    return name.rsplit("/", 1)[-1]


def project_of(name: str) -> str:
    """The project of a full name."""
    return name.split("/")[1]
