"""Resources declared at start (api/declared.py, service/declared.py, docs/init.md) applied on moto: every kind
created, re-applied without change, a changed field updated, bad entries refused whole, PUBSUB_PROJECT1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from chalicelib.api import declared
from chalicelib.api.parsing import publish_request, pull_request
from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument, MetroError, NotFound
from chalicelib.core.wire.requests import PageRequest
from chalicelib.runtime import Services

P = "decl"
TOKEN = "ops-token-0123456789abcdef"
AVRO_V1 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})
AVRO_V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 0}]})


def document() -> dict[str, Any]:
    """Every kind of entry, every Topic and Subscription field Metro supports."""
    return {
        "projects": [{"name": P, "description": "declared at start"}],
        "users": [
            {"name": "ops", "token": TOKEN, "email": "ops@example.com",
             "projects": [{"project": P, "roles": ["project_admin"]}]},
            {"name": "reader", "projects": [{"project": P, "roles": ["consumer"]}]},
        ],
        "schemas": [{"name": f"projects/{P}/schemas/order", "type": "AVRO", "definition": AVRO_V1,
                     "revisions": [{"type": "AVRO", "definition": AVRO_V2}]}],
        "topics": [
            {"name": f"projects/{P}/topics/orders", "labels": {"team": "billing"},
             "messageRetentionDuration": "86400s", "messageStoragePolicy": {"allowedPersistenceRegions": ["eu"]},
             "schemaSettings": {"schema": f"projects/{P}/schemas/order", "encoding": "JSON"}},
            {"name": f"projects/{P}/topics/orders-dead"},
            {"name": f"projects/{P}/topics/plain"},
        ],
        "subscriptions": [
            {"name": f"projects/{P}/subscriptions/billing", "topic": f"projects/{P}/topics/orders",
             "ackDeadlineSeconds": 30, "retainAckedMessages": True, "messageRetentionDuration": "3600s",
             "labels": {"team": "billing"}, "enableMessageOrdering": True, "filter": 'attributes.kind = "order"',
             "expirationPolicy": {"ttl": "172800s"},
             "deadLetterPolicy": {"deadLetterTopic": f"projects/{P}/topics/orders-dead", "maxDeliveryAttempts": 5},
             "retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "60s"}},
            {"name": f"projects/{P}/subscriptions/exact", "topic": f"projects/{P}/topics/plain",
             "enableExactlyOnceDelivery": True},
            {"name": f"projects/{P}/subscriptions/pushed", "topic": f"projects/{P}/topics/plain",
             "pushConfig": {"pushEndpoint": "http://127.0.0.1:9/push", "attributes": {"x-goog-version": "v1"}}},
            {"name": f"projects/{P}/subscriptions/gone", "topic": f"projects/{P}/topics/plain", "detached": True},
        ],
        "acls": [{"name": f"projects/{P}/topics/orders", "authorized_users": ["ops"]},
                 {"name": f"projects/{P}/subscriptions/billing", "authorized_users": ["ops", "reader"]}],
    }


def write(tmp_path: Path, doc: Any, name: str = "metro-init.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if name.endswith(".yaml") else json.dumps(doc))
    return path


def snapshot(services: Services) -> dict[str, Any]:
    """Everything the declaration can touch, as the API would show it."""
    page = PageRequest(100, "")
    return {
        "topics": [t.to_wire() for t in services.admin.list_topics(P, page).items],
        "subscriptions": [r.spec.reported().to_wire() for r in services.admin.list_subscriptions(P, page).items],
        "schemas": [r.to_wire() for r in services.schemas.list_revisions(names.make(P, "schemas", "order"),
                                                                          page).items],
        "users": sorted(u.name for u in services.ctx.identity.list_users()),
        "projects": [p.name for p in services.ctx.identity.list_projects()],
    }


def test_a_full_file_creates_every_kind(services: Services, tmp_path: Path) -> None:
    applied = declared.apply(write(tmp_path, document()), services)
    assert not applied.reported
    assert [user for user, _ in applied.tokens] == ["reader"]  # generated, to be shown once; ops's was given
    state = snapshot(services)
    assert state["projects"] == [P] and state["users"] == ["ops", "reader"]
    assert len(state["schemas"]) == 2  # AVRO_V1 then AVRO_V2, the head
    orders = next(t for t in state["topics"] if t["name"].endswith("/orders"))
    assert orders["labels"] == {"team": "billing"} and orders["messageRetentionDuration"] == "86400s"
    assert orders["schemaSettings"]["encoding"] == "JSON"
    subs = {s["name"].rsplit("/", 1)[1]: s for s in state["subscriptions"]}
    billing = subs["billing"]
    assert (billing["ackDeadlineSeconds"], billing["filter"], billing["enableMessageOrdering"]) == (
        30, 'attributes.kind = "order"', True)
    assert billing["deadLetterPolicy"]["maxDeliveryAttempts"] == 5
    assert billing["retryPolicy"] == {"minimumBackoff": "10s", "maximumBackoff": "60s"}
    assert subs["exact"]["enableExactlyOnceDelivery"] is True
    assert subs["pushed"]["pushConfig"]["pushEndpoint"] == "http://127.0.0.1:9/push"
    assert subs["gone"].get("detached") is True
    ops = services.ctx.identity.user_for_token(services.access.hasher.hash(TOKEN))
    assert ops is not None and ops.name == "ops"
    reader_token = applied.tokens[0][1]
    assert services.ctx.identity.user_for_token(services.access.hasher.hash(reader_token)) is not None
    assert services.access.authorized_users(names.make(P, "subscriptions", "billing")).names == ("ops", "reader")
    # the declared resources work: a message published on the declared topic reaches the declared subscription
    plain, exact = names.make(P, "topics", "plain"), names.make(P, "subscriptions", "exact")
    services.publish.publish(plain, publish_request({"messages": [{"data": "aGk="}]}))
    from chalicelib.delivery.fanout import FanOut
    from tests.functional.conftest import stream_event
    FanOut(services.ctx).handle(stream_event(services))
    pulled = services.pull.pull(exact, pull_request({"maxMessages": 5, "returnImmediately": True})).to_wire()
    assert [m["message"]["data"] for m in pulled["receivedMessages"]] == ["aGk="]


def test_reapplied_changes_nothing_and_duplicates_nothing(services: Services, tmp_path: Path) -> None:
    path = write(tmp_path, document())
    declared.apply(path, services)
    before = snapshot(services)
    again = declared.apply(path, services)
    assert snapshot(services) == before
    assert not again.tokens and not again.reported
    assert all(line.endswith("unchanged") for line in again.lines), again.lines
    json_path = write(tmp_path, document(), "metro-init.json")  # the same declaration in JSON
    assert all(line.endswith("unchanged") for line in declared.apply(json_path, services).lines)


def test_a_changed_field_is_updated_and_what_cannot_change_is_reported(services: Services, tmp_path: Path) -> None:
    declared.apply(write(tmp_path, document()), services)
    doc = document()
    doc["projects"][0]["description"] = "changed"
    doc["users"][0]["projects"][0]["roles"] = ["publisher"]
    doc["users"][0]["token"] = TOKEN + "-new"
    doc["topics"][0]["labels"] = {"team": "payments"}
    doc["subscriptions"][0]["ackDeadlineSeconds"] = 60
    doc["subscriptions"][0]["filter"] = 'attributes.kind = "refund"'  # not updatable
    doc["subscriptions"][1]["detached"] = True
    doc["schemas"][0]["revisions"].append({"type": "AVRO", "definition": AVRO_V1})  # back to V1, as a new head
    doc["acls"][0]["authorized_users"] = []
    applied = declared.apply(write(tmp_path, doc), services)
    assert any("billing: filter differs and cannot be updated" in r for r in applied.reported), applied.reported
    state = snapshot(services)
    subs = {s["name"].rsplit("/", 1)[1]: s for s in state["subscriptions"]}
    assert subs["billing"]["ackDeadlineSeconds"] == 60
    assert subs["billing"]["filter"] == 'attributes.kind = "order"'
    assert subs["exact"].get("detached") is True
    assert next(t for t in state["topics"] if t["name"].endswith("/orders"))["labels"] == {"team": "payments"}
    assert len(state["schemas"]) == 3 and json.loads(state["schemas"][0]["definition"]) == json.loads(AVRO_V1)
    assert services.ctx.identity.get_project(P).description == "changed"  # type: ignore[union-attr]
    ops = services.ctx.identity.user_for_token(services.access.hasher.hash(TOKEN + "-new"))
    assert ops is not None and ops.roles_in(P) == ("publisher",)
    assert services.ctx.identity.user_for_token(services.access.hasher.hash(TOKEN)) is None
    assert services.access.authorized_users(names.make(P, "topics", "orders")).names == ()


def _broken(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = document()
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


BAD = [
    # (what is changed, the entry refused, part of the API's message)
    (("topics", 0, "labels"), [1], "topics[0]", "Invalid value at 'labels'"),
    (("topics", 1, "messageRetentionDuration"), "1s", "topics[1]", "message_retention_duration must be between"),
    (("topics", 2, "nonsense"), 1, "topics[2]", 'Unknown name "nonsense"'),
    (("topics", 2, "name"), "plain", "topics[2]", "Invalid [topics] name"),
    (("subscriptions", 0, "ackDeadlineSeconds"), 5, "subscriptions[0]", "ack_deadline_seconds must be between"),
    (("subscriptions", 1, "topic"), f"projects/{P}/topics/missing", "subscriptions[1]", "does not exist"),
    (("subscriptions", 0, "deadLetterPolicy", "deadLetterTopic"), f"projects/{P}/topics/orders", "subscriptions[0]",
     "must differ"),
    (("subscriptions", 0, "filter"), "attributes.kind ==", "subscriptions[0]", ""),
    (("subscriptions", 2, "pushConfig", "pushEndpoint"), "ftp://example.com/", "subscriptions[2]", ""),
    (("schemas", 0, "type"), "NOPE", "schemas[0]", ""),
    (("schemas", 0, "revisions"), [{"type": "AVRO", "definition": "{not avro"}], "schemas[0].revisions[0]", ""),
    (("topics", 0, "schemaSettings", "schema"), f"projects/{P}/schemas/missing", "topics[0]", "Schema"),
    (("topics", 0, "schemaSettings", "firstRevisionId"), "abc", "topics[0]", "revision ids are not known yet"),
    (("users", 0, "projects"), [{"project": P, "roles": ["owner"]}], "users[0]", "Invalid role"),
    (("users", 0, "token"), "short", "users[0]", "Invalid token"),
    (("users", 1, "name"), "ops", "users[1]", "declared twice"),
    (("users", 1, "token"), TOKEN, "users[1]", "declared twice"),
    (("acls", 1, "authorized_users"), ["nobody"], "acls[1]", "do not exist"),
    (("acls", 0, "name"), f"projects/{P}/topics/missing", "acls[0]", "doesn't exist"),
]


@pytest.mark.parametrize(("path", "value", "entry", "reason"), BAD, ids=[f"{b[2]}-{'.'.join(map(str, b[0][2:]))}"
                                                                        for b in BAD])
def test_a_bad_entry_is_refused_and_nothing_is_created(services: Services, tmp_path: Path, path: tuple[Any, ...],
                                                      value: Any, entry: str, reason: str) -> None:
    file = write(tmp_path, _broken(path, value))
    with pytest.raises(MetroError) as refused:
        declared.apply(file, services)
    assert refused.value.message.startswith(f"{file}: {entry}: "), refused.value.message
    assert reason in refused.value.message
    assert isinstance(refused.value, InvalidArgument | NotFound)
    page = PageRequest(100, "")
    assert not services.admin.list_topics(P, page).items and not services.admin.list_subscriptions(P, page).items
    assert not services.ctx.identity.list_users() and not services.ctx.identity.list_projects()
    assert not services.schemas.list(P, page).items


def test_a_file_that_is_no_declaration_is_refused(tmp_path: Path, services: Services) -> None:
    for text, reason in (("[1, 2]", "the document must be an object"), ("tpoics: []", 'Unknown name "tpoics"'),
                         ("topics: {}", "topics: a list is expected"), ("topics: [", "neither YAML nor JSON")):
        (tmp_path / "bad.yaml").write_text(text)
        with pytest.raises(InvalidArgument, match=reason):
            declared.apply(tmp_path / "bad.yaml", services)
    with pytest.raises(InvalidArgument, match="cannot be read"):
        declared.apply(tmp_path / "missing.yaml", services)


def test_pubsub_project_variables_are_applied(services: Services) -> None:
    variables = [("PUBSUB_PROJECT1", "wrap,orders:billing:audit,events"), ("PUBSUB_PROJECT2", "other,topic2:sub2")]
    applied = declared.apply_declaration(declared.from_variables(variables), services)
    assert len(applied.lines) == 6
    page = PageRequest(100, "")
    assert sorted(t.name for t in services.admin.list_topics("wrap", page).items) == [
        "projects/wrap/topics/events", "projects/wrap/topics/orders"]
    subs = {r.name: r.spec for r in services.admin.list_subscriptions("wrap", page).items}
    assert {n: s.topic for n, s in subs.items()} == {"projects/wrap/subscriptions/audit": "projects/wrap/topics/orders",
                                                    "projects/wrap/subscriptions/billing":
                                                        "projects/wrap/topics/orders"}
    assert not any(s.is_push for s in subs.values())
    assert [t.name for t in services.admin.list_topics("other", page).items] == ["projects/other/topics/topic2"]
    again = declared.apply_declaration(declared.from_variables(variables), services)
    assert all(line.endswith("unchanged") for line in again.lines)
    with pytest.raises(InvalidArgument, match=r"^PUBSUB_PROJECT1: topics\[0\]: Invalid \[topics\] name"):
        declared.from_variables([("PUBSUB_PROJECT1", "wrap,o")])


def test_the_example_of_docs_init_md_applies_twice_without_change(services: Services, tmp_path: Path) -> None:
    from tests import doc_blocks

    page = doc_blocks.ROOT / "docs" / "init.md"
    file = tmp_path / "metro-init.yaml"
    file.write_text(doc_blocks.named_block(page, "metro-init.yaml").code)
    first = declared.apply(file, services)
    assert len(first.lines) == 11 and not any(line.endswith("unchanged") for line in first.lines), first.lines
    again = declared.apply(file, services)
    assert all(line.endswith("unchanged") for line in again.lines) and not again.reported, again.lines


def test_quotas_count_what_is_declared_before_anything_is_created(services: Services, tmp_path: Path) -> None:
    import dataclasses

    from chalicelib.config import Quotas
    from chalicelib.core.errors import ResourceExhausted

    config = dataclasses.replace(services.ctx.config, quotas=Quotas(topics=2, subscriptions_per_topic=1))
    limited = Services.build(dataclasses.replace(services.ctx, config=config))
    doc = {**document(), "acls": []}
    doc["topics"] = doc["topics"][:2]
    doc["subscriptions"] = doc["subscriptions"][:1] + [
        {"name": f"projects/{P}/subscriptions/extra-{n}", "topic": f"projects/{P}/topics/orders-dead"} for n in (1, 2)]
    with pytest.raises(ResourceExhausted, match=r"metro-init.yaml: subscriptions\[2\]: .*subscriptions-per-topic"):
        declared.apply(write(tmp_path, doc), limited)
    with pytest.raises(ResourceExhausted, match=r"metro-init.yaml: topics\[2\]: .*topics-per-project"):
        declared.apply(write(tmp_path, document()), limited)
    assert not services.admin.list_topics(P, PageRequest(100, "")).items


def test_a_token_another_user_holds_is_refused(services: Services, tmp_path: Path) -> None:
    declared.apply(write(tmp_path, {"users": [{"name": "first", "token": TOKEN}]}), services)
    with pytest.raises(InvalidArgument, match=r"users\[0\]: Invalid token: another user holds it"):
        declared.apply(write(tmp_path, {"users": [{"name": "second", "token": TOKEN}]}), services)
    assert [u.name for u in services.ctx.identity.list_users()] == ["first"]
