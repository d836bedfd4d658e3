"""Tenancy (METRO_AUTH=keys): every request field that names a resource is authorized against that resource's
own project, in both dialects, with the same 403 whether the named resource exists or not.

The cross-project matrix probes each ``Refers`` declaration of core/access/references.py through every route that
carries it: the project admin of tenant-a names tenant-b's resource (existing, then missing) and must get
the same 403 both times; the same request naming tenant-a's own resource is the positive control, and a
service admin naming tenant-b's resource passes the check. A declaration without a probe here fails.
Push identities and members' views are checked here too: a project owns its push identities, and a
project admin sees a member's roles in its own project only.
"""

from __future__ import annotations

import base64
import itertools
import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from chalice.test import Client

from chalicelib.api import routes
from chalicelib.api.dialect import Dialect
from tests.functional.app_client import app_client
from tests.unit.test_references import declared_references

ADMIN_KEY = "tenancy-admin-key-0123456789abcdefghijklmnop"
A, B = "tenant-a", "tenant-b"
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "METRO_PULL_WAIT_SECONDS": "0", "METRO_PULL_LINGER_MS": "0",
       "METRO_DIRECT_FANOUT": "0", "METRO_AUTH": "keys", "METRO_ADMIN_KEY": ADMIN_KEY,
       "METRO_ACK_SECRET": secrets.token_urlsafe(32),
       "METRO_PUSH_SERVICE_ACCOUNTS": f"{A}=ops@example.com,shared@example.com"}
AVRO = json.dumps({"type": "record", "name": "Row", "fields": [{"name": "a", "type": "string"}]})
MESSAGE = base64.b64encode(b'{"a": "x"}').decode()
ADMIN_A, SERVICE_ADMIN = "admin-a", "service-admin"
_fresh = itertools.count()


class Api:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.tokens = {SERVICE_ADMIN: ADMIN_KEY}
        self.dialect = Dialect.GOOGLE

    def call(self, method: str, path: str, body: Any = None, who: str = ADMIN_A) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json", "x-api-key": self.tokens[who]}
        raw = b"" if body is None else json.dumps(body).encode()
        resp = self.client.http.request(method, path, headers=headers, body=raw)
        return resp.status_code, json.loads(resp.body or b"{}")

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body, SERVICE_ADMIN)
        assert status == 200, (method, path, answer)
        return answer


def _set_up(api: Api) -> None:
    for p in (A, B):
        api.ok("POST", f"/v1/projects/{p}", {"description": "tenancy"})
        for topic in ("t-main", "t-dead", "t-patch"):
            api.ok("PUT", f"/v1/projects/{p}/topics/{topic}", {})
        api.ok("PUT", f"/v1/projects/{p}/subscriptions/s-main", {"topic": f"projects/{p}/topics/t-main"})
        api.ok("PUT", f"/v1/projects/{p}/snapshots/snap-main", {"subscription": f"projects/{p}/subscriptions/s-main"})
        api.ok("POST", f"/v1/projects/{p}/schemas?schemaId=sch-main", {"type": "AVRO", "definition": AVRO})
    api.tokens[ADMIN_A] = api.ok("POST", f"/v1/users/{ADMIN_A}",
                                 {"projects": [{"project": A, "roles": ["project_admin"]}]})["token"]
    api.ok("POST", "/v1/users/shared-user", {"projects": [{"project": B, "roles": ["consumer"]}]})
    api.ok("POST", f"/v1/projects/{B}/subscriptions/s-main:modifyAcl", {"authorized_users": ["shared-user"]})


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    with app_client(ENV) as client:
        ready = Api(client)
        _set_up(ready)
        yield ready


@pytest.fixture
def dialect(api: Api, monkeypatch: pytest.MonkeyPatch) -> Callable[[Dialect], None]:
    """Serve the next requests as the endpoint of a dialect (the stage variable API Gateway would set)."""
    def use(chosen: Dialect) -> None:
        monkeypatch.setattr(routes, "dialect_of", lambda _: chosen)
    return use


# -- the cross-project matrix ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Probe:
    """A request of tenant-a's admin whose body names ``ref`` (a full name; ``/`` first in AMS's form)."""

    method: str
    path: Callable[[], str]  # in tenant-a; a fresh resource id for the calls that create one
    body: Callable[[str], Any]
    collection: str  # what the named resource is
    covers: frozenset[tuple[str, str]]  # the declarations (class, field) this probe exercises
    dialects: tuple[Dialect, ...] = (Dialect.GOOGLE, Dialect.AMS)
    own: str = "main"  # the id of tenant-a's resource the positive control names


def fresh(path: str) -> Callable[[], str]:
    return lambda: path.replace("{new}", f"new-{next(_fresh)}")


def at(path: str) -> Callable[[], str]:
    return lambda: path


def _covers(*pairs: str) -> frozenset[tuple[str, str]]:
    return frozenset(tuple(p.split(".")) for p in pairs)  # type: ignore[misc]


def dead_letter(ref: str) -> dict[str, Any]:
    return {"deadLetterTopic": ref, "maxDeliveryAttempts": 5}


GOOGLE, AMS = (Dialect.GOOGLE,), (Dialect.AMS,)
SUBS, TOPICS = f"/v1/projects/{A}/subscriptions", f"/v1/projects/{A}/topics"
PROBES = {
    "subscribe to a topic": Probe("PUT", fresh(SUBS + "/{new}"), lambda ref: {"topic": ref}, "topics",
                                  _covers("Subscription.topic"), GOOGLE),
    "AMS: subscribe to a topic": Probe("PUT", fresh(SUBS + "/{new}"), lambda ref: {"topic": "/" + ref}, "topics",
                                       _covers("Subscription.topic"), AMS),
    "dead-letter topic at create": Probe(
        "PUT", fresh(SUBS + "/{new}"),
        lambda ref: {"topic": f"projects/{A}/topics/t-main", "deadLetterPolicy": dead_letter(ref)}, "topics",
        _covers("DeadLetterPolicy.dead_letter_topic"), GOOGLE, own="dead"),
    "dead-letter topic in a patch": Probe(
        "PATCH", at(SUBS + "/s-main"),
        lambda ref: {"subscription": {"deadLetterPolicy": dead_letter(ref)}, "updateMask": "deadLetterPolicy"},
        "topics", _covers("DeadLetterPolicy.dead_letter_topic"), own="dead"),
    "topic schema at create": Probe(
        "PUT", fresh(TOPICS + "/{new}"), lambda ref: {"schemaSettings": {"schema": ref, "encoding": "JSON"}},
        "schemas", _covers("SchemaSettings.schema_")),
    "topic schema in a patch": Probe(
        "PATCH", at(TOPICS + "/t-patch"),
        lambda ref: {"topic": {"schemaSettings": {"schema": ref, "encoding": "JSON"}}, "updateMask": "schemaSettings"},
        "schemas", _covers("SchemaSettings.schema_")),
    "AMS: topic schema at create": Probe("PUT", fresh(TOPICS + "/{new}"), lambda ref: {"schema": "/" + ref},
                                         "schemas", _covers("SchemaSettings.schema_"), AMS),
    "AMS: attachSchema": Probe("POST", at(TOPICS + "/t-patch:attachSchema"), lambda ref: {"schema": ref},
                               "schemas", _covers("SchemaSettings.schema_")),
    "validateMessage": Probe("POST", at(f"/v1/projects/{A}/schemas:validateMessage"),
                             lambda ref: {"name": ref, "message": MESSAGE, "encoding": "JSON"}, "schemas",
                             _covers("ValidateMessageRequest.schema")),
    "seek to a snapshot": Probe("POST", at(SUBS + "/s-main:seek"), lambda ref: {"snapshot": ref}, "snapshots",
                                _covers("SeekRequest.snapshot")),
    "snapshot of a subscription": Probe(
        "PUT", fresh(f"/v1/projects/{A}/snapshots/{{new}}"), lambda ref: {"subscription": ref}, "subscriptions",
        _covers("CreateSnapshotBody.subscription", "CreateSnapshotRequest.subscription")),
}
CELLS = [(name, d) for name, probe in PROBES.items() for d in probe.dialects]


def test_every_declared_reference_has_a_probe() -> None:
    covered = frozenset().union(*(p.covers for p in PROBES.values()))
    assert covered == declared_references()


@pytest.mark.parametrize(("name", "chosen"), CELLS, ids=[f"{n}-{d.value}" for n, d in CELLS])
def test_naming_another_projects_resource_is_refused_alike(api: Api, dialect: Callable[[Dialect], None],
                                                          name: str, chosen: Dialect) -> None:
    probe = PROBES[name]
    dialect(chosen)

    existing = _name(B, probe.collection, probe.own)
    missing = _name(B, probe.collection, "ghost")
    answers = [api.call(probe.method, probe.path(), probe.body(ref)) for ref in (existing, missing)]
    assert answers[0][0] == 403 and answers[0] == answers[1], answers
    assert answers[0][1]["error"]["status"] == ("FORBIDDEN" if chosen is Dialect.AMS else "PERMISSION_DENIED")
    status, answer = api.call(probe.method, probe.path(), probe.body(_name(A, probe.collection, probe.own)))
    assert status == 200, ("positive control", answer)
    status, answer = api.call(probe.method, probe.path(), probe.body(existing), SERVICE_ADMIN)
    assert status != 403, ("a service admin may name any project's resources", answer)


def _name(project: str, collection: str, resource: str) -> str:
    prefix = {"topics": "t", "subscriptions": "s", "snapshots": "snap", "schemas": "sch"}[collection]
    return f"projects/{project}/{collection}/{prefix}-{resource}"


# -- push identities ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("email", "status"), [
    (f"pusher@{A}.iam.gserviceaccount.com", 200),  # the project's own namespace
    ("ops@example.com", 200),  # assigned to tenant-a by the operator
    (f"pusher@{B}.iam.gserviceaccount.com", 403),  # tenant-b's
    ("shared@example.com", 403),  # a plain entry: any project in open mode only
    ("victim@example.com", 403),
])
def test_a_project_registers_only_push_identities_it_owns(api: Api, email: str, status: int) -> None:
    answer = api.call("POST", f"/v1/projects/{A}:modifyPushIdentities", {"service_accounts": [email]})
    assert answer[0] == status, answer


# -- members ----------------------------------------------------------------------------------------------------
def test_a_project_admin_sees_members_in_its_own_project_only(api: Api) -> None:
    status, added = api.call("POST", f"/v1/projects/{A}/members/shared-user:add", {"roles": ["publisher"]})
    assert status == 200, added
    status, shown = api.call("GET", f"/v1/projects/{A}/members/shared-user")
    status_list, listed = api.call("GET", f"/v1/projects/{A}/members")
    assert status == status_list == 200
    views = [added, shown, *[u for u in listed["users"] if u["name"] == "shared-user"]]
    assert len(views) == 3
    for view in views:
        assert [p["project"] for p in view["projects"]] == [A], view
    everything = api.call("GET", "/v1/users/shared-user", who=SERVICE_ADMIN)[1]
    assert {p["project"] for p in everything["projects"]} == {A, B}
