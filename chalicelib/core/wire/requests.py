"""Typed request values: what the api layer parses a request body into, and what services take.

Field names are Python's; the wire spellings (camelCase and snake_case, proto3 JSON's string forms
of numbers and booleans) are read in api/parsing.py, never in service/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from chalicelib.core.access.accounts import ProjectRoles
from chalicelib.core.access.references import (
    CONSUME_SUBSCRIPTION,
    PROJECT_USERS,
    PUSH_IDENTITY,
    READ_SNAPSHOT,
    SERVICE_ADMIN_ONLY,
)
from chalicelib.core.names import Name
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.models import PushConfig, Snapshot, Subscription, Topic


@dataclass(frozen=True)
class PullRequest:
    max_messages: int
    return_immediately: bool = False


@dataclass(frozen=True)
class AcknowledgeRequest:
    ack_ids: tuple[str, ...]


@dataclass(frozen=True)
class ModifyAckDeadlineRequest:
    ack_ids: tuple[str, ...]
    ack_deadline_seconds: int


@dataclass(frozen=True)
class PageRequest:
    """A list call's paging: ``size`` already clamped to the API's bounds; ``token`` as the client sent it."""

    size: int
    token: str = ""


@dataclass(frozen=True)
class UpdateTopicRequest:
    """A topic patch: the fields named by ``update_mask`` (Python field names of Topic) are taken from ``topic``."""

    topic: Topic
    update_mask: tuple[str, ...]


@dataclass(frozen=True)
class UpdateSubscriptionRequest:
    """A subscription patch: the fields named by ``update_mask`` are taken from ``subscription``."""

    subscription: Subscription
    update_mask: tuple[str, ...]


@dataclass(frozen=True)
class PublishRequest:
    messages: tuple[NewMessage, ...]


@dataclass(frozen=True)
class ModifyPushConfigRequest:
    """An empty push config (no endpoint) turns the subscription into a pull subscription."""

    push_config: PushConfig


# -- replay: seek and snapshots --------------------------------------------------------------------------
@dataclass(frozen=True)
class SeekRequest:
    """``:seek``: exactly one of ``time`` (epoch seconds) and ``snapshot``."""

    time: float | None = None
    snapshot: Annotated[Name | None, READ_SNAPSHOT] = None


@dataclass(frozen=True)
class CreateSnapshotRequest:
    subscription: Annotated[Name, CONSUME_SUBSCRIPTION]
    labels: dict[str, str]


@dataclass(frozen=True)
class UpdateSnapshotRequest:
    """A snapshot patch: the fields named by ``update_mask`` are taken from ``snapshot``."""

    snapshot: Snapshot
    update_mask: tuple[str, ...]


# -- identity and access (AMS users, projects and ACLs; Google's IAM methods) -----------------------------
@dataclass(frozen=True)
class ProjectRequest:
    """``POST``/``PUT /v1/projects/{p}``: the description (None: unchanged on update)."""

    description: str | None = None


@dataclass(frozen=True)
class UserRequest:
    """``POST``/``PUT /v1/users/{name}``; on update, a field left None is unchanged."""

    projects: Annotated[tuple[ProjectRoles, ...] | None, SERVICE_ADMIN_ONLY] = None
    service_roles: tuple[str, ...] | None = None
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    organization: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class RolesRequest:
    """A member's roles in one project (``members/{user}:add``, ``PUT members/{user}``)."""

    roles: tuple[str, ...]


@dataclass(frozen=True)
class AclRequest:
    """AMS's ``:modifyAcl`` (``authorized_users``) or Google's ``:setIamPolicy`` (members ``user:<name>``);
    ``etag``, when given, must be the current policy's."""

    names: Annotated[tuple[str, ...], PROJECT_USERS]
    etag: str = ""


@dataclass(frozen=True)
class PermissionsQuery:
    permissions: tuple[str, ...]


@dataclass(frozen=True)
class PushIdentitiesRequest:
    """The service accounts a project's push subscriptions may name in ``oidcToken``."""

    service_accounts: Annotated[tuple[str, ...], PUSH_IDENTITY]
