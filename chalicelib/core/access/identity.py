"""Identity and access, the pure part: roles, principals, the actions routes need, and who may do them.

The model is ARGO Messaging Service's: projects; users with roles per project (``project_admin``,
``publisher``, ``consumer``) and service-wide roles (``service_admin``); topics and subscriptions with an
access list (ACL) of the users allowed to publish to them or consume from them. Every route names one
:class:`Action` (api/permissions.py); :func:`allowed` decides it for a principal from the principal's
roles in the resource's project and, for publish and consume, the resource's ACL.

Tokens are 256 random bits, shown once; only a keyed hash (:class:`TokenHasher`) is ever stored.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

SERVICE_ADMIN = "service_admin"
PROJECT_ADMIN = "project_admin"
PUBLISHER = "publisher"
CONSUMER = "consumer"
PROJECT_ROLES = frozenset({PROJECT_ADMIN, PUBLISHER, CONSUMER})
SERVICE_ROLES = frozenset({SERVICE_ADMIN})

TOKEN_BYTES = 32  # 256 bits
MAX_TOKEN_CHARS = 512  # anything longer is no token Metro issued
_KEY_LABEL = b"metro api tokens v1"


class Action(Enum):
    """What a route does, as far as access is concerned."""

    PUBLIC = "public"  # no token needed: GET / and the JWKS
    AUTHENTICATED = "authenticated"  # any known token: the caller's own profile
    SERVICE_ADMIN = "service_admin"  # projects and users of the whole service
    PROJECT_ADMIN = "project_admin"  # changes to a project's resources, their ACLs, its members
    PROJECT_MEMBER = "project_member"  # any role in the project (testIamPermissions)
    READ_TOPICS = "read_topics"  # list and get topics: project_admin, publisher
    READ_SUBSCRIPTIONS = "read_subscriptions"  # list and get subscriptions: project_admin, consumer
    PUBLISH = "publish"  # project_admin; a publisher on the topic's ACL
    CONSUME = "consume"  # pull, acknowledge, modifyAckDeadline: project_admin; a consumer on the ACL


# The project role that grants a read action, and the role that grants an ACL action with an ACL entry.
_READ_ROLE = {Action.READ_TOPICS: PUBLISHER, Action.READ_SUBSCRIPTIONS: CONSUMER}
_ACL_ROLE = {Action.PUBLISH: PUBLISHER, Action.CONSUME: CONSUMER}
_ANYONE = frozenset({Action.PUBLIC, Action.AUTHENTICATED})  # (AUTHENTICATED: the token was already checked)


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: a user's name and uuid (ACL entries hold uuids), service and project roles."""

    name: str
    uuid: str
    service_roles: frozenset[str] = frozenset()
    projects: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def is_service_admin(self) -> bool:
        return SERVICE_ADMIN in self.service_roles

    def roles_in(self, project: str) -> frozenset[str]:
        return self.projects.get(project, frozenset())


# METRO_AUTH=open: every request acts as this principal, whatever credentials it carries.
OPEN_PRINCIPAL = Principal("anonymous", "", SERVICE_ROLES)


def needs_acl(principal: Principal, action: Action, project: str) -> bool:
    """Whether deciding ``action`` needs the resource's ACL (only a publisher or consumer's publish or consume)."""
    role = _ACL_ROLE.get(action)
    if role is None or principal.is_service_admin:
        return False
    roles = principal.roles_in(project)
    return PROJECT_ADMIN not in roles and role in roles


def allowed(principal: Principal, action: Action, project: str, acl: frozenset[str] = frozenset()) -> bool:
    """Whether ``principal`` may do ``action`` on a resource of ``project`` whose ACL holds the uuids ``acl``."""
    if action in _ANYONE or principal.is_service_admin:
        return True
    roles = principal.roles_in(project)
    if action is Action.SERVICE_ADMIN or not roles:
        return False
    if PROJECT_ADMIN in roles or action is Action.PROJECT_MEMBER:
        return True
    if action in _READ_ROLE:
        return _READ_ROLE[action] in roles
    return action in _ACL_ROLE and _ACL_ROLE[action] in roles and principal.uuid in acl


# -- tokens ---------------------------------------------------------------------------------------------
def new_token() -> str:
    """A fresh API token: 256 random bits, base64url (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


class TokenHasher:
    """The keyed hash under which a token is stored and looked up (HMAC-SHA256, key derived from a secret)."""

    def __init__(self, secret: bytes) -> None:
        self._key = hmac.new(secret, _KEY_LABEL, hashlib.sha256).digest()

    def hash(self, token: str) -> str:
        return hmac.new(self._key, token.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def same_secret(given: str, expected: str) -> bool:
    """Constant-time comparison of a presented token with a configured one (empty never matches)."""
    return bool(expected) and hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())


# Google's IAM permissions on topics and subscriptions (testIamPermissions) -> the action that grants each.
IAM_PERMISSIONS: Mapping[str, Mapping[str, Action]] = {
    "topics": {
        "pubsub.topics.get": Action.READ_TOPICS,
        "pubsub.topics.publish": Action.PUBLISH,
        "pubsub.topics.update": Action.PROJECT_ADMIN,
        "pubsub.topics.delete": Action.PROJECT_ADMIN,
        "pubsub.topics.attachSubscription": Action.PROJECT_ADMIN,
        "pubsub.topics.getIamPolicy": Action.PROJECT_ADMIN,
        "pubsub.topics.setIamPolicy": Action.PROJECT_ADMIN,
    },
    "subscriptions": {
        "pubsub.subscriptions.get": Action.READ_SUBSCRIPTIONS,
        "pubsub.subscriptions.consume": Action.CONSUME,
        "pubsub.subscriptions.update": Action.PROJECT_ADMIN,
        "pubsub.subscriptions.delete": Action.PROJECT_ADMIN,
        "pubsub.subscriptions.getIamPolicy": Action.PROJECT_ADMIN,
        "pubsub.subscriptions.setIamPolicy": Action.PROJECT_ADMIN,
    },
}
