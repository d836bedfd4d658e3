"""Metro's OpenAPI 3.1 description, built from one table of operations (``OPERATIONS``) and the component
schemas of api/openapi_schemas.py; served at ``/openapi.json``, rendered for people at ``/docs``
(api/openapi_page.py).

Every route of app.py and every (method, verb) of the permission table (api/permissions.py) has one row
here; tests/unit/test_openapi.py fails on a route or a permission entry without one, and on a row whose
route or verb Metro does not serve.

A ``{id}:{verb}`` call is one path segment (api/routes.py splits it), so its path in the description is the
route template followed by the literal verb, e.g. ``/v1/projects/{project}/topics/{topic}:publish``: a
concrete template that clients and fuzzers fill in like any other.

The Google endpoint is the one described. The AMS endpoint serves the same operations; where its answers
have AMS's shape (topics, subscriptions, pull, the schema reads: api/ams_handlers.py's ``OVERRIDES``), the
description does not follow it. Areas with many operations are described in modules of their own
(api/openapi_schema_registry.py, api/openapi_replay.py: rows, component schemas and parameters), merged here.

To describe a new operation:

1. add its route and permission rule to api/permissions.py (and its handler to a route table);
2. add one ``Op(...)`` row below: the route constant, the method, the verb (``""`` for none), a summary,
   the component name of its JSON body (``body=``, or none) and of its 200 answer (``answer=``,
   ``"Empty"`` by default), and its query parameters (``query=``, keys of ``QUERY``);
3. if the body or answer has a new shape, add its schema to api/openapi_schemas.py (``_REQUESTS`` or
   ``_RESPONSES``), reusing ``ref(...)`` for the shapes it nests. A new path parameter name gets its schema
   in ``PATH_PARAMETERS``.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from chalicelib.api import permissions as p
from chalicelib.api.openapi_parts import PROJECT_ID, RESOURCE_ID, Op, Schema, ref
from chalicelib.api.openapi_schemas import AREAS, components

TITLE = "Metro: Google Cloud Pub/Sub REST v1 and ARGO Messaging Service API"
VERSION = "v1"
# Errors every authenticated operation may answer (Google's envelope, api/http.py); 5xx are never expected.
ERRORS = ("400", "401", "403", "404", "409", "429")
PUBLIC_ERRORS = ("404",)


T, S, ACL = "topics", "subscriptions", "ACL"
OPERATIONS: tuple[Op, ...] = (
    # -- Google's publisher and subscriber resources
    Op(p.TOPICS, "GET", "", "List the project's topics", "ListTopicsResponse", query=("pageSize", "pageToken"), tag=T),
    Op(p.TOPIC, "PUT", "", "Create a topic", "Topic", body="Topic", tag=T),
    Op(p.TOPIC, "GET", "", "Get a topic", "Topic", tag=T),
    Op(p.TOPIC, "PATCH", "", "Update a topic's fields named by updateMask", "Topic", body="UpdateTopicRequest", tag=T),
    Op(p.TOPIC, "DELETE", "", "Delete a topic (its subscriptions stay, detached from it)", tag=T),
    Op(p.TOPIC, "POST", "publish", "Publish messages", "PublishResponse", body="PublishRequest", tag=T),
    Op(p.TOPIC, "GET", "metrics", "A topic's metrics (AMS)", "Metrics", tag=T),
    Op(p.TOPIC_SUBSCRIPTIONS, "GET", "", "Names of a topic's subscriptions", "ListTopicSubscriptionsResponse",
       query=("pageSize", "pageToken"), tag=T),
    Op(p.SUBSCRIPTIONS, "GET", "", "List the project's subscriptions", "ListSubscriptionsResponse",
       query=("pageSize", "pageToken"), tag=S),
    Op(p.SUBSCRIPTION, "PUT", "", "Create a subscription", "Subscription", body="Subscription", tag=S),
    Op(p.SUBSCRIPTION, "GET", "", "Get a subscription", "Subscription", tag=S),
    Op(p.SUBSCRIPTION, "PATCH", "", "Update a subscription's fields named by updateMask", "Subscription",
       body="UpdateSubscriptionRequest", tag=S),
    Op(p.SUBSCRIPTION, "DELETE", "", "Delete a subscription", tag=S),
    Op(p.SUBSCRIPTION, "POST", "pull", "Pull messages", "PullResponse", body="PullRequest", tag=S),
    Op(p.SUBSCRIPTION, "POST", "acknowledge", "Acknowledge messages", body="AcknowledgeRequest", tag=S),
    Op(p.SUBSCRIPTION, "POST", "modifyAckDeadline", "Extend, shorten or end (0 s: nack) ack deadlines",
       body="ModifyAckDeadlineRequest", tag=S),
    Op(p.SUBSCRIPTION, "POST", "modifyPushConfig", "Switch between push and pull, or change the endpoint",
       body="ModifyPushConfigRequest", tag=S),
    Op(p.SUBSCRIPTION, "POST", "detach", "Detach a subscription from its topic", body="Empty", tag=S),
    Op(p.SUBSCRIPTION, "GET", "metrics", "A subscription's metrics (AMS)", "Metrics", tag=S),
    Op(p.SUBSCRIPTION, "POST", "verifyPushEndpoint", "Verify the push endpoint's ownership (AMS)", body="Empty",
       tag=S),
    # -- access lists: AMS's :acl/:modifyAcl and Google's IAM methods, on topics and subscriptions
    *(op for route, kind in ((p.TOPIC, "topic"), (p.SUBSCRIPTION, "subscription")) for op in (
        Op(route, "GET", "acl", f"The users on the {kind}'s ACL (AMS)", "AuthorizedUsers", tag=ACL),
        Op(route, "POST", "modifyAcl", f"Replace the {kind}'s ACL (AMS)", body="AclRequest", tag=ACL),
        Op(route, "GET", "getIamPolicy", f"The {kind}'s ACL as an IAM policy", "Policy", tag=ACL),
        Op(route, "POST", "getIamPolicy", f"The {kind}'s ACL as an IAM policy", "Policy",
           body="GetIamPolicyRequest", tag=ACL),
        Op(route, "POST", "setIamPolicy", f"Replace the {kind}'s ACL from an IAM policy", "Policy",
           body="SetIamPolicyRequest", tag=ACL),
        Op(route, "POST", "testIamPermissions", f"Which of the given permissions the caller holds on the {kind}",
           "TestIamPermissionsResponse", body="TestIamPermissionsRequest", tag=ACL))),
    # -- AMS's projects, members and users
    Op(p.PROJECTS, "GET", "", "List projects", "AmsProjects"),
    Op(p.PROJECT, "POST", "", "Create a project", "AmsProject", body="ProjectRequest"),
    Op(p.PROJECT, "GET", "", "Get a project", "AmsProject"),
    Op(p.PROJECT, "PUT", "", "Update a project's description", "AmsProject", body="ProjectRequest"),
    Op(p.PROJECT, "DELETE", "", "Delete a project and everything in it"),
    Op(p.PROJECT, "GET", "metrics", "A project's metrics", "Metrics"),
    Op(p.PROJECT, "GET", "pushIdentities", "Service accounts push subscriptions may sign as", "PushIdentities"),
    Op(p.PROJECT, "POST", "modifyPushIdentities", "Replace the project's push identities", "PushIdentities",
       body="PushIdentitiesRequest"),
    Op(p.MEMBERS, "GET", "", "List the project's members", "AmsUsers", query=("pageSize", "pageToken")),
    Op(p.MEMBER, "GET", "", "Get a project member", "AmsUser"),
    Op(p.MEMBER, "POST", "", "Create a user as a member of the project", "AmsUser", body="UserRequest"),
    Op(p.MEMBER, "PUT", "", "Change a member's roles in the project", "AmsUser", body="UserRequest"),
    Op(p.MEMBER, "POST", "add", "Add an existing user to the project", "AmsUser", body="MemberRolesRequest"),
    Op(p.MEMBER, "POST", "remove", "Remove a user from the project", body="Empty"),
    Op(p.USERS, "GET", "", "List users", "AmsUsers", query=("pageSize", "pageToken", "project")),
    Op(p.USER, "GET", "profile", "The caller's own user", "AmsUser", path="/v1/users/profile"),
    Op(p.USER, "POST", "", "Create a user (its token is in the answer)", "AmsUser", body="UserRequest"),
    Op(p.USER, "GET", "", "Get a user", "AmsUser"),
    Op(p.USER, "PUT", "", "Update a user", "AmsUser", body="UserRequest"),
    Op(p.USER, "DELETE", "", "Delete a user"),
    Op(p.USER, "POST", "refreshToken", "Issue a new token for a user (the old one stops working)", "AmsUser",
       body="Empty"),
    # -- AMS's operational routes
    Op(p.STATUS, "GET", "", "The service's health (AMS)", "Status", tag="service"),
    Op(p.VERSION, "GET", "", "The service's version (AMS)", "Version", tag="service"),
    Op(p.SERVICE_METRICS, "GET", "", "Projects, users, topics and subscriptions of the service, counted", "Metrics",
       tag="service"),
    # -- the areas described in modules of their own
    *(op for area in AREAS for op in area.OPERATIONS),
    # -- public routes
    Op(p.ROOT, "GET", "", "Health check: answers Ok", "Text", tag="service", content="text/plain"),
    Op(p.JWKS, "GET", "", "The keys that verify Metro's push tokens", "Jwks", tag="service"),
    Op(p.JWKS_WELL_KNOWN, "GET", "", "The keys that verify Metro's push tokens", "Jwks", tag="service"),
    Op(p.OPENAPI, "GET", "", "This description", "OpenApi", tag="service"),
    Op(p.DOCS, "GET", "", "This description as an HTML page", "Text", tag="service", content="text/html"),
)

# Path parameters as core/names.py and api/account_requests.py check them; the examples name the resources
# `make fuzz` creates before it starts.
PATH_PARAMETERS: dict[str, Schema] = {
    "project": {**PROJECT_ID, "example": "fuzz-project"},
    "topic": {**RESOURCE_ID, "example": "fuzz-topic"},
    "subscription": {**RESOURCE_ID, "example": "fuzz-subscription"},
    "user": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._@+\-]{0,99}$", "example": "fuzz-user"},
    **{name: schema for area in AREAS for name, schema in area.PATH_PARAMETERS.items()},
}
QUERY: dict[str, Schema] = {
    "pageSize": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 0}],
                 "description": "0 or empty: the default; over 1000 reads as 1000"},
    "pageToken": {"type": "string"},
    "project": {"type": "string"},
    **{name: schema for area in AREAS for name, schema in area.QUERY.items()},
}
SECURITY_SCHEMES: Schema = {
    "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
    "bearer": {"type": "http", "scheme": "bearer"},
    "key": {"type": "apiKey", "in": "query", "name": "key"},
}
_TEXT: Schema = {"type": "string"}


def _responses(op: Op) -> Schema:
    schema = _TEXT if op.answer == "Text" else ref(op.answer)
    out: Schema = {"200": {"description": "OK", "content": {op.content: {"schema": schema}}}}
    for code in PUBLIC_ERRORS if op.public else ERRORS:
        out[code] = {"$ref": f"#/components/responses/Error{code}"}
    return out


def _operation(op: Op) -> Schema:
    out: Schema = {"operationId": operation_id(op), "summary": op.summary, "tags": [op.tag],
                   "responses": _responses(op)}
    names = re.findall(r"{(\w+)}", op.url)
    params = [{"name": n, "in": "path", "required": True, "schema": PATH_PARAMETERS[n]} for n in names]
    params += [{"name": q, "in": "query", "required": q in op.required, "schema": QUERY[q]} for q in op.query]
    if params:
        out["parameters"] = params
    if op.body:
        # An empty body reads as {} (protobuf JSON), so no body is required.
        out["requestBody"] = {"required": False, "content": {"application/json": {"schema": ref(op.body)}}}
    if op.public:
        out["security"] = []
    return out


def operation_id(op: Op) -> str:
    """``POST /v1/projects/{project}/topics/{topic}:publish`` -> ``post_projects_project_topics_topic_publish``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{op.method.lower()}{op.url.removeprefix('/v1')}").strip("_")


def _error_responses() -> Schema:
    return {f"Error{code}": {"description": "Google's error envelope",
                             "content": {"application/json": {"schema": ref("Error")}}}
            for code in ERRORS}


@functools.cache
def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.url, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": VERSION,
                 "description": "Google Cloud Pub/Sub REST v1 and ARGO Messaging Service, served by Metro. "
                                "Errors come in Google's envelope {\"error\": {\"code\", \"message\", \"status\"}}."},
        "paths": paths,
        "components": {"schemas": components(), "responses": _error_responses(),
                       "securitySchemes": SECURITY_SCHEMES},
        "security": [{"apiKey": []}, {"bearer": []}, {"key": []}],
    }


@functools.cache
def document_json() -> str:
    return json.dumps(document(), separators=(",", ":"))
