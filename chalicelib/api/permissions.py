"""The one permission table: for every route of app.py and every (HTTP method, verb) it serves, the action it
needs (core/identity.Action) and the kind of resource that action applies to. api/routes.py looks every
request up here after authenticating it and before its handler runs; a pair missing here is refused.

Roles as ARGO Messaging Service defines them: project_admin may do everything in its project (ACLs
included); a publisher lists and reads the project's topics and publishes to those whose ACL lists it; a
consumer lists and reads subscriptions and pulls, acknowledges and modifies ack deadlines on those whose
ACL lists it; service_admin may do everything, projects and users included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chalicelib.core.identity import Action

# Route templates (app.py registers exactly these).
ROOT = "/"
JWKS = "/v1/jwks"
JWKS_WELL_KNOWN = "/.well-known/jwks.json"
OPENAPI = "/openapi.json"
DOCS = "/docs"
PROJECTS = "/v1/projects"
PROJECT = "/v1/projects/{project}"
TOPICS = "/v1/projects/{project}/topics"
TOPIC = "/v1/projects/{project}/topics/{topic}"
TOPIC_SUBSCRIPTIONS = "/v1/projects/{project}/topics/{topic}/subscriptions"
SUBSCRIPTIONS = "/v1/projects/{project}/subscriptions"
SUBSCRIPTION = "/v1/projects/{project}/subscriptions/{subscription}"
MEMBERS = "/v1/projects/{project}/members"
MEMBER = "/v1/projects/{project}/members/{user}"
USERS = "/v1/users"
SNAPSHOTS = "/v1/projects/{project}/snapshots"
SNAPSHOT = "/v1/projects/{project}/snapshots/{snapshot}"
TOPIC_SNAPSHOTS = "/v1/projects/{project}/topics/{topic}/snapshots"
SCHEMAS = "/v1/projects/{project}/schemas"
SCHEMA = "/v1/projects/{project}/schemas/{schema}"
# ``projects/{p}/schemas:validate`` arrives as one segment next to ``topics``, ``subscriptions``, ``schemas``, ...
PROJECT_COLLECTION_VERB = "/v1/projects/{project}/{collection}"
USER = "/v1/users/{user}"
STATUS = "/v1/status"
VERSION = "/v1/version"
SERVICE_METRICS = "/v1/metrics"

# What an action applies to: nothing (service-wide), a project, or a topic or subscription of a project.
SERVICE = "service"
IN_PROJECT = "project"
TOPICS_KIND = "topics"
SUBSCRIPTIONS_KIND = "subscriptions"


@dataclass(frozen=True)
class Rule:
    action: Action
    applies_to: str


_PUBLIC = Rule(Action.PUBLIC, SERVICE)
_SERVICE_ADMIN = Rule(Action.SERVICE_ADMIN, SERVICE)
_PROJECT_ADMIN = Rule(Action.PROJECT_ADMIN, IN_PROJECT)
_PROJECT_MEMBER = Rule(Action.PROJECT_MEMBER, IN_PROJECT)
_TOPIC_ADMIN = Rule(Action.PROJECT_ADMIN, TOPICS_KIND)
_SUB_ADMIN = Rule(Action.PROJECT_ADMIN, SUBSCRIPTIONS_KIND)
_READ_TOPIC = Rule(Action.READ_TOPICS, TOPICS_KIND)
_READ_SUB = Rule(Action.READ_SUBSCRIPTIONS, SUBSCRIPTIONS_KIND)
_CONSUME = Rule(Action.CONSUME, SUBSCRIPTIONS_KIND)

PERMISSIONS: Mapping[str, Mapping[tuple[str, str], Rule]] = {
    ROOT: {("GET", ""): _PUBLIC},
    JWKS: {("GET", ""): _PUBLIC},
    JWKS_WELL_KNOWN: {("GET", ""): _PUBLIC},
    OPENAPI: {("GET", ""): _PUBLIC},
    DOCS: {("GET", ""): _PUBLIC},
    PROJECTS: {("GET", ""): _SERVICE_ADMIN},
    PROJECT: {
        ("POST", ""): _SERVICE_ADMIN,
        ("GET", ""): _PROJECT_ADMIN,
        ("PUT", ""): _SERVICE_ADMIN,
        ("DELETE", ""): _SERVICE_ADMIN,
        ("GET", "metrics"): _PROJECT_ADMIN,
        ("GET", "pushIdentities"): _PROJECT_ADMIN,
        ("POST", "modifyPushIdentities"): _PROJECT_ADMIN,
    },
    TOPICS: {("GET", ""): Rule(Action.READ_TOPICS, IN_PROJECT)},
    TOPIC: {
        ("PUT", ""): _TOPIC_ADMIN,
        ("GET", ""): _READ_TOPIC,
        ("PATCH", ""): _TOPIC_ADMIN,
        ("DELETE", ""): _TOPIC_ADMIN,
        ("POST", "publish"): Rule(Action.PUBLISH, TOPICS_KIND),
        ("GET", "metrics"): _READ_TOPIC,
        ("POST", "attachSchema"): _TOPIC_ADMIN,
        ("POST", "detachSchema"): _TOPIC_ADMIN,
        ("GET", "acl"): _TOPIC_ADMIN,
        ("POST", "modifyAcl"): _TOPIC_ADMIN,
        ("GET", "getIamPolicy"): _TOPIC_ADMIN,
        ("POST", "getIamPolicy"): _TOPIC_ADMIN,
        ("POST", "setIamPolicy"): _TOPIC_ADMIN,
        ("POST", "testIamPermissions"): Rule(Action.PROJECT_MEMBER, TOPICS_KIND),
    },
    TOPIC_SUBSCRIPTIONS: {("GET", ""): _READ_TOPIC},
    SUBSCRIPTIONS: {("GET", ""): Rule(Action.READ_SUBSCRIPTIONS, IN_PROJECT)},
    SUBSCRIPTION: {
        ("PUT", ""): _SUB_ADMIN,
        ("GET", ""): _READ_SUB,
        ("PATCH", ""): _SUB_ADMIN,
        ("DELETE", ""): _SUB_ADMIN,
        ("POST", "pull"): _CONSUME,
        ("POST", "acknowledge"): _CONSUME,
        ("POST", "modifyAckDeadline"): _CONSUME,
        ("POST", "modifyPushConfig"): _SUB_ADMIN,
        ("POST", "detach"): _SUB_ADMIN,
        ("GET", "metrics"): _READ_SUB,
        ("POST", "verifyPushEndpoint"): _SUB_ADMIN,
        ("GET", "offsets"): _CONSUME,
        ("GET", "timeToOffset"): _CONSUME,
        ("POST", "modifyOffset"): _CONSUME,  # a seek, as Google's :seek
        ("GET", "acl"): _SUB_ADMIN,
        ("POST", "modifyAcl"): _SUB_ADMIN,
        ("GET", "getIamPolicy"): _SUB_ADMIN,
        ("POST", "getIamPolicy"): _SUB_ADMIN,
        ("POST", "setIamPolicy"): _SUB_ADMIN,
        ("POST", "testIamPermissions"): Rule(Action.PROJECT_MEMBER, SUBSCRIPTIONS_KIND),
        ("POST", "seek"): _CONSUME,
        ("GET", "seekStatus"): _READ_SUB,  # a Metro extension: the latest seek's progress
    },
    # Snapshots have no ACL of their own: project admins manage them, whoever reads subscriptions reads them,
    # and seeking to one is consuming from the subscription (the SUBSCRIPTION route's ``seek``).
    SNAPSHOTS: {("GET", ""): Rule(Action.READ_SUBSCRIPTIONS, IN_PROJECT)},
    SNAPSHOT: {
        ("PUT", ""): _PROJECT_ADMIN,
        ("GET", ""): Rule(Action.READ_SUBSCRIPTIONS, IN_PROJECT),
        ("PATCH", ""): _PROJECT_ADMIN,
        ("DELETE", ""): _PROJECT_ADMIN,
    },
    TOPIC_SNAPSHOTS: {("GET", ""): _READ_TOPIC},
    MEMBERS: {("GET", ""): _PROJECT_ADMIN},
    MEMBER: {
        ("GET", ""): _PROJECT_ADMIN,
        ("POST", ""): _PROJECT_ADMIN,
        ("PUT", ""): _PROJECT_ADMIN,
        ("POST", "add"): _PROJECT_ADMIN,
        ("POST", "remove"): _PROJECT_ADMIN,
    },
    USERS: {("GET", ""): _SERVICE_ADMIN},
    # Schemas belong to a project: any member reads and validates, its project_admin changes them.
    SCHEMAS: {("GET", ""): _PROJECT_MEMBER, ("POST", ""): _PROJECT_ADMIN},
    PROJECT_COLLECTION_VERB: {("POST", "validate"): _PROJECT_MEMBER, ("POST", "validateMessage"): _PROJECT_MEMBER},
    SCHEMA: {
        ("GET", ""): _PROJECT_MEMBER,
        ("DELETE", ""): _PROJECT_ADMIN,
        ("POST", "commit"): _PROJECT_ADMIN,
        ("POST", "rollback"): _PROJECT_ADMIN,
        ("GET", "listRevisions"): _PROJECT_MEMBER,
        ("DELETE", "deleteRevision"): _PROJECT_ADMIN,
        ("POST", ""): _PROJECT_ADMIN,  # AMS: create
        ("PUT", ""): _PROJECT_ADMIN,  # AMS: update (a new revision)
        ("POST", "validate"): _PROJECT_MEMBER,  # AMS: validate a message
    },
    USER: {
        ("GET", "profile"): Rule(Action.AUTHENTICATED, SERVICE),  # GET /v1/users/profile: the caller
        ("POST", ""): _SERVICE_ADMIN,
        ("GET", ""): _SERVICE_ADMIN,
        ("PUT", ""): _SERVICE_ADMIN,
        ("DELETE", ""): _SERVICE_ADMIN,
        ("POST", "refreshToken"): _SERVICE_ADMIN,
    },
    STATUS: {("GET", ""): Rule(Action.AUTHENTICATED, SERVICE)},
    VERSION: {("GET", ""): Rule(Action.AUTHENTICATED, SERVICE)},
    SERVICE_METRICS: {("GET", ""): _SERVICE_ADMIN},
}


def rule_for(route: str, method: str, verb: str) -> Rule | None:
    return PERMISSIONS.get(route, {}).get((method, verb))
