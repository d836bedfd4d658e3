"""Typed request values: what the api layer parses a request body into, and what services take.

Field names are Python's; the wire spellings (camelCase and snake_case, proto3 JSON's string forms
of numbers and booleans) are read in api/requests.py, never in service/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from chalicelib.core.accounts import ProjectRoles
from chalicelib.core.messages import NewMessage
from chalicelib.core.models import PushConfig, Subscription, Topic
from chalicelib.core.references import PROJECT_USERS, PUSH_IDENTITY, SERVICE_ADMIN_ONLY


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
