"""Routes and the rules of access: every route template Metro serves, and the rules (an action of
core/access/identity.Action and the kind of resource it applies to) that each method names in its declaration
(api/methods.py). api/registry.py derives the permission table from those declarations; api/routes.py looks
every request up there after authenticating it and before its handler runs; a pair missing there is refused.

Roles as ARGO Messaging Service defines them: project_admin may do everything in its project (ACLs
included); a publisher lists and reads the project's topics and publishes to those whose ACL lists it; a
consumer lists and reads subscriptions and pulls, acknowledges and modifies ack deadlines on those whose
ACL lists it; service_admin may do everything, projects and users included.
"""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.core.access.identity import Action

# Route templates (app.py registers exactly these).
ROOT = "/"
JWKS = "/v1/jwks"
JWKS_WELL_KNOWN = "/.well-known/jwks.json"
OPENAPI = "/openapi.json"
DOCS = "/docs"
CONSOLE = "/console"  # the web console (api/console/): its page, script and style
CONSOLE_SCRIPT = "/console/app.js"
CONSOLE_STYLE = "/console/app.css"
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
DECLARATION = "/v1/declaration"  # resources declared in one document (docs/init.md; `metro init`)

# What an action applies to: nothing (service-wide), a project, or a topic or subscription of a project.
SERVICE = "service"
IN_PROJECT = "project"
TOPICS_KIND = "topics"
SUBSCRIPTIONS_KIND = "subscriptions"


@dataclass(frozen=True)
class Rule:
    action: Action
    applies_to: str


# The rules methods name (api/methods.py): the action, and what it applies to.
PUBLIC = Rule(Action.PUBLIC, SERVICE)
AUTHENTICATED = Rule(Action.AUTHENTICATED, SERVICE)
SERVICE_ADMIN = Rule(Action.SERVICE_ADMIN, SERVICE)
PROJECT_ADMIN = Rule(Action.PROJECT_ADMIN, IN_PROJECT)
PROJECT_MEMBER = Rule(Action.PROJECT_MEMBER, IN_PROJECT)
READ_PROJECT_TOPICS = Rule(Action.READ_TOPICS, IN_PROJECT)
READ_PROJECT_SUBSCRIPTIONS = Rule(Action.READ_SUBSCRIPTIONS, IN_PROJECT)
TOPIC_ADMIN = Rule(Action.PROJECT_ADMIN, TOPICS_KIND)
SUBSCRIPTION_ADMIN = Rule(Action.PROJECT_ADMIN, SUBSCRIPTIONS_KIND)
READ_TOPIC = Rule(Action.READ_TOPICS, TOPICS_KIND)
READ_SUBSCRIPTION = Rule(Action.READ_SUBSCRIPTIONS, SUBSCRIPTIONS_KIND)
PUBLISH = Rule(Action.PUBLISH, TOPICS_KIND)
CONSUME = Rule(Action.CONSUME, SUBSCRIPTIONS_KIND)
TOPIC_MEMBER = Rule(Action.PROJECT_MEMBER, TOPICS_KIND)
SUBSCRIPTION_MEMBER = Rule(Action.PROJECT_MEMBER, SUBSCRIPTIONS_KIND)
