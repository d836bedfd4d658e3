"""Projects and users as ARGO Messaging Service shows them (its users and projects API pages), and the IAM
policy view of a resource ACL (Google's getIamPolicy / setIamPolicy). Pure values; stores keep them as JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from chalicelib.core.access.identity import SERVICE_ADMIN, Principal


def ams_time(epoch: float) -> str:
    """AMS writes times as RFC 3339 in UTC to the second (``2009-11-10T23:00:00Z``)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ProjectRoles:
    project: str
    roles: tuple[str, ...]


@dataclass(frozen=True)
class Project:
    name: str
    description: str = ""
    created_on: float = 0.0
    modified_on: float = 0.0
    created_by: str = ""
    # Service accounts that push tokens of this project's subscriptions may assert (oidcToken).
    push_identities: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "created_on": ams_time(self.created_on), "modified_on": ams_time(self.modified_on),
                "created_by": self.created_by, "description": self.description}

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Project:
        raw = json.loads(text)
        return cls(**{**raw, "push_identities": tuple(raw.get("push_identities", ()))})


@dataclass(frozen=True)
class User:
    name: str
    uuid: str
    projects: tuple[ProjectRoles, ...] = ()
    service_roles: tuple[str, ...] = ()
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    organization: str = ""
    description: str = ""
    created_on: float = 0.0
    modified_on: float = 0.0
    created_by: str = ""

    def principal(self) -> Principal:
        return Principal(self.name, self.uuid, frozenset(self.service_roles),
                         {p.project: frozenset(p.roles) for p in self.projects})

    def roles_in(self, project: str) -> tuple[str, ...]:
        return next((p.roles for p in self.projects if p.project == project), ())

    def with_roles(self, project: str, roles: Iterable[str]) -> User:
        """This user with ``roles`` in ``project`` (no roles: no longer a member)."""
        kept = tuple(p for p in self.projects if p.project != project)
        wanted = tuple(sorted(set(roles)))
        return replace(self, projects=(*kept, ProjectRoles(project, wanted)) if wanted else kept)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> User:
        raw = json.loads(text)
        projects = tuple(ProjectRoles(p["project"], tuple(p["roles"])) for p in raw.pop("projects", ()))
        return cls(**{**raw, "projects": projects, "service_roles": tuple(raw.get("service_roles", ()))})


@dataclass(frozen=True)
class UserView:
    """A user as a response shows it: the token only right after it was made (create, refresh), the ACL
    memberships per project, and the service-wide fields only for a service admin (AMS's unprivileged view).
    ``project``, when set, is the one project shown: a project admin sees a member's roles and ACL entries in
    that project only, never in the member's other projects."""

    user: User
    token: str = ""
    privileged: bool = True
    acl_entries: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    project: str = ""

    def to_wire(self) -> dict[str, Any]:
        u = self.user
        projects = [{"project": p.project, "roles": list(p.roles),
                     "topics": list(self.acl_entries.get(p.project, ((), ()))[0]),
                     "subscriptions": list(self.acl_entries.get(p.project, ((), ()))[1])}
                    for p in u.projects if not self.project or p.project == self.project]
        out: dict[str, Any] = {"uuid": u.uuid, "projects": projects, "name": u.name}
        for key in ("first_name", "last_name", "organization", "description"):
            if getattr(u, key):
                out[key] = getattr(u, key)
        out.update({"token": self.token, "email": u.email,
                    "service_roles": list(u.service_roles) if self.privileged else [],
                    "created_on": ams_time(u.created_on), "modified_on": ams_time(u.modified_on)})
        if u.created_by and self.privileged:
            out["created_by"] = u.created_by
        return out


@dataclass(frozen=True)
class UserPage:
    """AMS's paged user list: ``users``, ``nextPageToken`` and ``totalSize`` always present."""

    users: tuple[UserView, ...]
    next_page_token: str
    total_size: int

    def to_wire(self) -> dict[str, Any]:
        return {"users": [u.to_wire() for u in self.users], "nextPageToken": self.next_page_token,
                "totalSize": self.total_size}


@dataclass(frozen=True)
class ProjectList:
    projects: tuple[Project, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"projects": [p.to_wire() for p in self.projects]}


@dataclass(frozen=True)
class AuthorizedUsers:
    """AMS's ``:acl`` answer (and ``:modifyAcl`` body): the names of the users on a resource's ACL."""

    names: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"authorized_users": list(self.names)}


@dataclass(frozen=True)
class PushIdentities:
    service_accounts: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"service_accounts": list(self.service_accounts)}


# -- the IAM view of an ACL ----------------------------------------------------------------------------
TOPIC_ROLE = "roles/pubsub.publisher"
SUBSCRIPTION_ROLE = "roles/pubsub.subscriber"
ACL_ROLE = {"topics": TOPIC_ROLE, "subscriptions": SUBSCRIPTION_ROLE}
MEMBER_PREFIX = "user:"


def policy_etag(names: Iterable[str]) -> str:
    """The etag of an ACL: a digest of its sorted names (base64, as Google's etags are bytes)."""
    digest = hashlib.sha256("\n".join(sorted(names)).encode()).digest()[:8]
    return base64.b64encode(digest).decode("ascii")


@dataclass(frozen=True)
class Policy:
    """``google.iam.v1.Policy`` of a topic or subscription: one binding of the collection's role."""

    role: str
    names: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": 1, "etag": policy_etag(self.names)}
        if self.names:
            out["bindings"] = [{"role": self.role, "members": [MEMBER_PREFIX + n for n in sorted(self.names)]}]
        return out


@dataclass(frozen=True)
class Permissions:
    """``TestIamPermissionsResponse``: the subset of the asked permissions the caller holds."""

    permissions: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"permissions": list(self.permissions)} if self.permissions else {}


def service_admin_user(name: str, now: float) -> User:
    """The bootstrap principal (METRO_ADMIN_KEY) as a user, for its profile."""
    return User(name=name, uuid="", service_roles=(SERVICE_ADMIN,), created_on=now, modified_on=now)
