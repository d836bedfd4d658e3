"""The permission matrix (METRO_AUTH=keys): every route x every principal x own or other project, through
Chalice's test client on moto, asserting the exact status and Google status string.

The routes come from the app itself (app.routes and the permission table, chalicelib/api/permissions.py);
who may do each action is stated here independently (ALLOWED, after ARGO Messaging Service's roles). A
route added without a permission entry, or a (method, verb) without a probe below, fails the tests.
Each probe is chosen so that an allowed call ends in a known answer without changing anything (a
conflict, a missing resource, a refused body, or a read), so every cell runs against the same state.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from chalice.test import Client

from app import app
from chalicelib.api import permissions, registry
from tests.functional.app_client import app_client

ADMIN_KEY = "matrix-admin-key-0123456789abcdefghijklmnop"
OWN, OTHER, GHOST = "own-project", "other-project", "ghost-project"
TOPIC, SUB = "t-acl", "s-acl"
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "METRO_PULL_WAIT_SECONDS": "0", "METRO_PULL_LINGER_MS": "0",
       "METRO_DIRECT_FANOUT": "0", "METRO_AUTH": "keys", "METRO_ADMIN_KEY": ADMIN_KEY,
       "METRO_ACK_SECRET": secrets.token_urlsafe(32)}  # keys mode refuses the built-in one

# The principals of the matrix: users of OWN with each role (publisher and consumer with and without the
# ACL entry on t-acl and s-acl), the bootstrap service admin, no token, and a token Metro never issued.
ROLES = {"project_admin": "project_admin", "publisher": "publisher", "publisher-noacl": "publisher",
         "consumer": "consumer", "consumer-noacl": "consumer"}
NONE, WRONG, SERVICE_ADMIN = "none", "wrong-token", "service_admin"
PRINCIPALS = [NONE, WRONG, SERVICE_ADMIN, *ROLES]

# Who may do each action in their own project (service_admin may do everything, everywhere).
ALLOWED: dict[str, set[str]] = {
    "public": set(PRINCIPALS),
    "authenticated": {SERVICE_ADMIN, *ROLES},
    "service_admin": set(),
    "project_admin": {"project_admin"},
    "project_member": set(ROLES),
    "read_topics": {"project_admin", "publisher", "publisher-noacl"},
    "read_subscriptions": {"project_admin", "consumer", "consumer-noacl"},
    "publish": {"project_admin", "publisher"},
    "consume": {"project_admin", "consumer"},
}


@dataclass(frozen=True)
class Probe:
    path: str  # {p} is the project of the cell
    action: str  # the action this route needs, as the roles of AMS define it (a key of ALLOWED)
    status: int  # the answer when allowed
    body: Any = None
    project: str = ""  # a fixed project instead of own and other


def topic(verb: str = "", resource: str = TOPIC) -> str:
    return "/v1/projects/{p}/topics/" + resource + (f":{verb}" if verb else "")


def sub(verb: str = "", resource: str = SUB) -> str:
    return "/v1/projects/{p}/subscriptions/" + resource + (f":{verb}" if verb else "")


SCHEMA = "/v1/projects/{p}/schemas/ghost-schema"
BAD_MASK = {"updateMask": "no_such_field"}
BAD_ROLE_POLICY = {"policy": {"bindings": [{"role": "roles/pubsub.viewer", "members": ["user:x"]}]}}
ACL_PROBES = {
    ("GET", "acl"): (200, None),
    ("POST", "modifyAcl"): (404, {"authorized_users": ["nobody-here"]}),
    ("GET", "getIamPolicy"): (200, None),
    ("POST", "getIamPolicy"): (200, {}),
    ("POST", "setIamPolicy"): (400, BAD_ROLE_POLICY),
}
P = permissions
PROBES: dict[tuple[str, str, str], Probe] = {
    (P.ROOT, "GET", ""): Probe("/", "public", 200),
    (P.JWKS, "GET", ""): Probe("/v1/jwks", "public", 200),
    (P.JWKS_WELL_KNOWN, "GET", ""): Probe("/.well-known/jwks.json", "public", 200),
    (P.OPENAPI, "GET", ""): Probe("/openapi.json", "public", 200),
    (P.DOCS, "GET", ""): Probe("/docs", "public", 200),
    (P.CONSOLE, "GET", ""): Probe("/console", "public", 200),
    (P.CONSOLE_SCRIPT, "GET", ""): Probe("/console/app.js", "public", 200),
    (P.CONSOLE_STYLE, "GET", ""): Probe("/console/app.css", "public", 200),
    (P.PROJECTS, "GET", ""): Probe("/v1/projects", "service_admin", 200, project=OWN),
    (P.DECLARATION, "POST", ""): Probe("/v1/declaration", "service_admin", 400, {"unknown": []}, project=OWN),
    (P.PROJECT, "POST", ""): Probe("/v1/projects/{p}", "service_admin", 409, {}),
    (P.PROJECT, "GET", ""): Probe("/v1/projects/{p}", "project_admin", 200),
    (P.PROJECT, "PUT", ""): Probe("/v1/projects/{p}", "service_admin", 400, {"description": 5}),
    (P.PROJECT, "DELETE", ""): Probe("/v1/projects/{p}", "service_admin", 404, project=GHOST),
    (P.PROJECT, "GET", "metrics"): Probe("/v1/projects/{p}:metrics", "project_admin", 200),
    (P.PROJECT, "GET", "pushIdentities"): Probe("/v1/projects/{p}:pushIdentities", "project_admin", 200),
    (P.PROJECT, "POST", "modifyPushIdentities"): Probe("/v1/projects/{p}:modifyPushIdentities", "project_admin", 400,
                                                       {"service_accounts": ["not-an-email"]}),
    (P.TOPICS, "GET", ""): Probe("/v1/projects/{p}/topics", "read_topics", 200),
    (P.TOPIC, "PUT", ""): Probe(topic(), "project_admin", 409, {}),
    (P.TOPIC, "GET", ""): Probe(topic(), "read_topics", 200),
    (P.TOPIC, "PATCH", ""): Probe(topic(), "project_admin", 400, BAD_MASK),
    (P.TOPIC, "DELETE", ""): Probe(topic(resource="t-ghost"), "project_admin", 404),
    (P.TOPIC, "POST", "publish"): Probe(topic("publish"), "publish", 400, {"messages": []}),
    (P.TOPIC, "GET", "metrics"): Probe(topic("metrics"), "read_topics", 200),
    (P.TOPIC, "POST", "testIamPermissions"): Probe(topic("testIamPermissions"), "project_member", 200,
                                                   {"permissions": ["pubsub.topics.get"]}),
    (P.TOPIC_SUBSCRIPTIONS, "GET", ""): Probe(topic() + "/subscriptions", "read_topics", 200),
    (P.SUBSCRIPTIONS, "GET", ""): Probe("/v1/projects/{p}/subscriptions", "read_subscriptions", 200),
    (P.SUBSCRIPTION, "PUT", ""): Probe(sub(), "project_admin", 409, {"topic": "projects/{p}/topics/" + TOPIC}),
    (P.SUBSCRIPTION, "GET", ""): Probe(sub(), "read_subscriptions", 200),
    (P.SUBSCRIPTION, "PATCH", ""): Probe(sub(), "project_admin", 400, BAD_MASK),
    (P.SUBSCRIPTION, "DELETE", ""): Probe(sub(resource="s-ghost"), "project_admin", 404),
    (P.SUBSCRIPTION, "POST", "pull"): Probe(sub("pull"), "consume", 400, {"maxMessages": 0}),
    (P.SUBSCRIPTION, "POST", "acknowledge"): Probe(sub("acknowledge"), "consume", 400, {"ackIds": []}),
    (P.SUBSCRIPTION, "POST", "modifyAckDeadline"): Probe(sub("modifyAckDeadline"), "consume", 400,
                                                         {"ackIds": [], "ackDeadlineSeconds": 10}),
    (P.SUBSCRIPTION, "POST", "modifyPushConfig"): Probe(sub("modifyPushConfig", "s-ghost"), "project_admin", 404, {}),
    (P.SUBSCRIPTION, "POST", "detach"): Probe(sub("detach", "s-ghost"), "project_admin", 404, {}),
    (P.SUBSCRIPTION, "GET", "metrics"): Probe(sub("metrics"), "read_subscriptions", 200),
    (P.SUBSCRIPTION, "POST", "verifyPushEndpoint"): Probe(sub("verifyPushEndpoint"), "project_admin", 400, {}),
    (P.SUBSCRIPTION, "GET", "offsets"): Probe(sub("offsets"), "consume", 200),
    (P.SUBSCRIPTION, "GET", "timeToOffset"): Probe(sub("timeToOffset") + "?time=bad", "consume", 400),
    (P.SUBSCRIPTION, "POST", "modifyOffset"): Probe(sub("modifyOffset"), "consume", 400, {"offset": -1}),
    (P.SUBSCRIPTION, "POST", "testIamPermissions"): Probe(sub("testIamPermissions"), "project_member", 200,
                                                          {"permissions": ["pubsub.subscriptions.consume"]}),
    (P.SUBSCRIPTION, "POST", "seek"): Probe(sub("seek"), "consume", 400, {}),
    (P.SUBSCRIPTION, "GET", "seekStatus"): Probe(sub("seekStatus"), "read_subscriptions", 200),
    (P.SNAPSHOTS, "GET", ""): Probe("/v1/projects/{p}/snapshots", "read_subscriptions", 200),
    (P.SNAPSHOT, "PUT", ""): Probe("/v1/projects/{p}/snapshots/snap-ghost", "project_admin", 404,
                                   {"subscription": "projects/{p}/subscriptions/s-ghost"}),
    (P.SNAPSHOT, "GET", ""): Probe("/v1/projects/{p}/snapshots/snap-ghost", "read_subscriptions", 404),
    (P.SNAPSHOT, "PATCH", ""): Probe("/v1/projects/{p}/snapshots/snap-ghost", "project_admin", 400, BAD_MASK),
    (P.SNAPSHOT, "DELETE", ""): Probe("/v1/projects/{p}/snapshots/snap-ghost", "project_admin", 404),
    (P.TOPIC_SNAPSHOTS, "GET", ""): Probe(topic() + "/snapshots", "read_topics", 200),
    (P.MEMBERS, "GET", ""): Probe("/v1/projects/{p}/members", "project_admin", 200),
    (P.MEMBER, "GET", ""): Probe("/v1/projects/{p}/members/admin-{p}", "project_admin", 200),
    (P.MEMBER, "POST", ""): Probe("/v1/projects/{p}/members/publisher", "project_admin", 409, {"roles": ["consumer"]}),
    (P.MEMBER, "PUT", ""): Probe("/v1/projects/{p}/members/publisher", "project_admin", 400, {"roles": []}),
    (P.MEMBER, "POST", "add"): Probe("/v1/projects/{p}/members/publisher:add", "project_admin", 400,
                                     {"roles": ["bogus"]}),
    (P.MEMBER, "POST", "remove"): Probe("/v1/projects/{p}/members/nobody-here:remove", "project_admin", 404, {}),
    (P.USERS, "GET", ""): Probe("/v1/users", "service_admin", 200, project=OWN),
    (P.USER, "GET", "profile"): Probe("/v1/users/profile", "authenticated", 200, project=OWN),
    (P.USER, "POST", ""): Probe("/v1/users/publisher", "service_admin", 409, {}, project=OWN),
    (P.USER, "GET", ""): Probe("/v1/users/publisher", "service_admin", 200, project=OWN),
    (P.USER, "PUT", ""): Probe("/v1/users/publisher", "service_admin", 400, {"email": "not-an-email"}, project=OWN),
    (P.USER, "DELETE", ""): Probe("/v1/users/nobody-here", "service_admin", 404, project=OWN),
    (P.USER, "POST", "refreshToken"): Probe("/v1/users/nobody-here:refreshToken", "service_admin", 404, {},
                                            project=OWN),
    (P.SCHEMAS, "GET", ""): Probe("/v1/projects/{p}/schemas", "project_member", 200),
    (P.SCHEMAS, "POST", ""): Probe("/v1/projects/{p}/schemas", "project_admin", 400, {}),  # no schemaId
    (P.PROJECT_COLLECTION_VERB, "POST", "validate"): Probe("/v1/projects/{p}/schemas:validate", "project_member",
                                                           400, {"schema": {"type": "AVRO", "definition": "{}"}}),
    (P.PROJECT_COLLECTION_VERB, "POST", "validateMessage"): Probe(
        "/v1/projects/{p}/schemas:validateMessage", "project_member", 404,
        {"name": "projects/{p}/schemas/ghost-schema", "message": "e30=", "encoding": "JSON"}),
    (P.SCHEMA, "GET", ""): Probe(SCHEMA, "project_member", 404),
    (P.SCHEMA, "DELETE", ""): Probe(SCHEMA, "project_admin", 404),
    (P.SCHEMA, "POST", "commit"): Probe(SCHEMA + ":commit", "project_admin", 400, {}),
    (P.SCHEMA, "POST", "rollback"): Probe(SCHEMA + ":rollback", "project_admin", 400, {}),
    (P.SCHEMA, "GET", "listRevisions"): Probe(SCHEMA + ":listRevisions", "project_member", 404),
    (P.SCHEMA, "DELETE", "deleteRevision"): Probe(SCHEMA + ":deleteRevision?revisionId=abc", "project_admin", 404),
    (P.SCHEMA, "POST", ""): Probe(SCHEMA, "project_admin", 400, {"type": "xml"}),
    (P.SCHEMA, "PUT", ""): Probe(SCHEMA, "project_admin", 404, {}),
    (P.SCHEMA, "POST", "validate"): Probe(SCHEMA + ":validate", "project_member", 404, {}),
    (P.TOPIC, "POST", "attachSchema"): Probe(topic("attachSchema"), "project_admin", 400, {}),
    (P.TOPIC, "POST", "detachSchema"): Probe(topic("detachSchema", "t-ghost"), "project_admin", 404, {}),
}
for (method, verb), (status, body) in ACL_PROBES.items():
    PROBES[(P.TOPIC, method, verb)] = Probe(topic(verb), "project_admin", status, body)
    PROBES[(P.SUBSCRIPTION, method, verb)] = Probe(sub(verb), "project_admin", status, body)

PROBES[(P.STATUS, "GET", "")] = Probe("/v1/status", "authenticated", 200, project=OWN)
PROBES[(P.VERSION, "GET", "")] = Probe("/v1/version", "authenticated", 200, project=OWN)
PROBES[(P.SERVICE_METRICS, "GET", "")] = Probe("/v1/metrics", "service_admin", 200, project=OWN)

ENTRIES = sorted((route, method, verb) for route, rules in registry.PERMISSIONS.items() for (method, verb) in rules)


class Api:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.tokens: dict[str, str] = {SERVICE_ADMIN: ADMIN_KEY, WRONG: "x" * 43}

    def call(self, method: str, path: str, body: Any = None, who: str = SERVICE_ADMIN) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if who != NONE:
            headers["x-api-key"] = self.tokens[who]
        raw = b"" if body is None else json.dumps(body).encode()
        resp = self.client.http.request(method, path, headers=headers, body=raw)
        try:
            return resp.status_code, json.loads(resp.body or b"{}")
        except ValueError:
            return resp.status_code, resp.body

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        assert status == 200, (method, path, answer)
        return answer


def _set_up(api: Api) -> None:
    for project in (OWN, OTHER):
        api.ok("POST", f"/v1/projects/{project}", {"description": "matrix"})
        api.ok("PUT", f"/v1/projects/{project}/topics/{TOPIC}", {})
        api.ok("PUT", f"/v1/projects/{project}/subscriptions/{SUB}", {"topic": f"projects/{project}/topics/{TOPIC}"})
        made = api.ok("POST", f"/v1/users/admin-{project}",
                      {"projects": [{"project": project, "roles": ["project_admin"]}]})
        if project == OWN:
            api.tokens["project_admin"] = made["token"]
    for name, role in ROLES.items():
        if name != "project_admin":
            made = api.ok("POST", f"/v1/users/{name}", {"projects": [{"project": OWN, "roles": [role]}]})
            api.tokens[name] = made["token"]
    api.ok("POST", f"/v1/projects/{OWN}/topics/{TOPIC}:modifyAcl", {"authorized_users": ["publisher"]})
    api.ok("POST", f"/v1/projects/{OWN}/subscriptions/{SUB}:modifyAcl", {"authorized_users": ["consumer"]})


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    with app_client(ENV) as client:
        ready = Api(client)
        _set_up(ready)
        yield ready


def expected(action: str, who: str, project: str, probe: Probe) -> tuple[int, str]:
    if who in (NONE, WRONG) and action != "public":
        return 401, "UNAUTHENTICATED"
    own = project in (OWN, "") or action in ("public", "authenticated", "service_admin")
    if who == SERVICE_ADMIN or (own and who in ALLOWED[action]):
        return probe.status, ""
    return 403, "PERMISSION_DENIED"


def test_every_route_has_rules_and_every_rule_a_probe() -> None:
    routes = set(app.routes)
    assert routes == set(registry.PERMISSIONS), "a route of app.py has no entry in the permission table"
    for route in registry.ROUTES:
        assert set(registry.table(route)) == set(registry.PERMISSIONS[route]), route
    assert set(PROBES) == set(ENTRIES), "a permission entry has no probe here"
    assert {rule.action.value for rules in registry.PERMISSIONS.values() for rule in rules.values()} <= set(ALLOWED)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e[1]} {e[0]}:{e[2]}".rstrip(":"))
def test_permission_matrix(api: Api, entry: tuple[str, str, str]) -> None:
    _route, method, _verb = entry
    probe = PROBES[entry]
    action = probe.action
    failures = []
    for project in [probe.project] if probe.project else [OWN, OTHER]:
        path = probe.path.replace("{p}", project)
        body = json.loads(json.dumps(probe.body).replace("{p}", project)) if probe.body is not None else None
        for who in PRINCIPALS:
            status, answer = api.call(method, path, body, who)
            want_status, want_code = expected(action, who, project, probe)
            got_code = answer.get("error", {}).get("status", "") if isinstance(answer, dict) else ""
            if status != want_status or (want_code and got_code != want_code):
                failures.append((project, who, status, got_code, str(answer)[:160]))
    assert not failures, f"{method} {probe.path} ({action}), expected per ALLOWED: {failures}"


def test_each_credential_form_is_accepted(api: Api) -> None:
    token = api.tokens["publisher"]
    path = f"/v1/projects/{OWN}/topics/{TOPIC}"
    forms = [({"Authorization": f"Bearer {token}"}, path), ({"x-goog-api-key": token}, path),
             ({}, f"{path}?key={token}"), ({"x-api-key": token}, path)]
    for headers, url in forms:
        assert api.client.http.get(url, headers=headers).status_code == 200, headers
    assert api.client.http.get(path, headers={"Authorization": "Basic abc"}).status_code == 401
