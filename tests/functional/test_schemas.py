"""The schema use cases (service/schemas.py, service/schema_topics.py) on moto: what both API dialects call."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request, pull_request, subscription_request
from chalicelib.core import names
from chalicelib.core.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from chalicelib.core.schemas.invalid import MessageInvalid
from chalicelib.core.schemas.model import (
    DELETED_SCHEMA,
    Encoding,
    SchemaRevision,
    SchemaSpec,
    SchemaType,
    ValidateMessageRequest,
)
from chalicelib.core.wire.models import SchemaSettings, Topic
from chalicelib.core.wire.requests import PageRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store import batch
from tests.functional.conftest import FakeClock, stream_event

P = "func-project"
SCHEMA = names.make(P, "schemas", "orders")
TOPIC = names.make(P, "topics", "orders-topic")
SUB = names.make(P, "subscriptions", "orders-sub")
V1 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"},
                                                               {"name": "qty", "type": "int"}]})


def avro(definition: str) -> SchemaSpec:
    return SchemaSpec(SchemaType.AVRO, definition)


def publish(services: Services, *docs: dict[str, Any]) -> list[str]:
    body = {"messages": [{"data": base64.b64encode(json.dumps(d).encode()).decode()} for d in docs]}
    return list(services.publish.publish(TOPIC, publish_request(body)).message_ids)


def delivered(services: Services) -> list[dict[str, Any]]:
    FanOut(services.ctx).handle(stream_event(services))
    return list(services.pull.pull(SUB, pull_request({"maxMessages": 10, "returnImmediately": True}))
                .to_wire().get("receivedMessages", []))


def with_topic(services: Services, **settings: str) -> None:
    services.admin.create_topic(TOPIC, Topic(schema_settings=SchemaSettings(schema=SCHEMA.path, **settings)))
    services.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path}, SUB))


def test_revisions_commit_rollback_delete(services: Services, clock: FakeClock) -> None:
    first = services.schemas.create(SCHEMA, avro(V1))
    with pytest.raises(AlreadyExists):
        services.schemas.create(SCHEMA, avro(V1))
    clock.advance(1)
    second = services.schemas.commit(SCHEMA, avro(V2))
    assert services.schemas.get(SCHEMA) == second
    assert services.schemas.get(SCHEMA, first.head.revision_id) == first.head
    clock.advance(1)
    third = services.schemas.rollback(SCHEMA, first.head.revision_id)
    assert third.definition == V1 and third.revision_id not in (first.head.revision_id, second.revision_id)
    page = services.schemas.list_revisions(SCHEMA, PageRequest(2))
    assert [r.revision_id for r in page.items] == [third.revision_id, second.revision_id]
    rest = services.schemas.list_revisions(SCHEMA, PageRequest(2, page.next_page_token))
    assert [r.revision_id for r in rest.items] == [first.head.revision_id] and not rest.next_page_token
    assert services.schemas.delete_revision(SCHEMA, third.revision_id) == third
    assert services.schemas.get(SCHEMA) == second  # the head moved back
    assert services.schemas.record(SCHEMA).uuid == first.uuid
    assert [r.name for r in services.schemas.list(P, PageRequest(10)).items] == [SCHEMA.path]
    services.schemas.delete_revision(SCHEMA, first.head.revision_id)
    with pytest.raises(InvalidArgument, match="Cannot delete last revision"):
        services.schemas.delete_revision(SCHEMA, second.revision_id)
    services.schemas.delete(SCHEMA)
    with pytest.raises(NotFound):
        services.schemas.get(SCHEMA)
    assert services.schemas.list(P, PageRequest(10)).items == ()


def test_bad_definitions_and_commits_are_refused(services: Services) -> None:
    with pytest.raises(InvalidArgument, match=r"Could not parse schema definition: .*name"):
        services.schemas.create(SCHEMA, avro('{"type": "record"}'))
    services.schemas.create(SCHEMA, avro(V1))
    with pytest.raises(InvalidArgument, match="type"):
        services.schemas.commit(SCHEMA, SchemaSpec(SchemaType.JSON_SCHEMA, '{"type": "object"}'))
    with pytest.raises(NotFound):
        services.schemas.rollback(SCHEMA, "nope0000")


def test_topic_settings_are_checked(services: Services) -> None:
    bad: list[tuple[dict[str, str], type[Exception], str]] = [
        ({"schema": SCHEMA.path, "encoding": "JSON"}, NotFound, "Schema could not be found")]
    services.schemas.create(names.make(P, "schemas", "other"), avro(V1))
    bad += [({"schema": "projects/func-project/schemas/other"}, InvalidArgument, "encoding"),
            ({"schema": "projects/func-project/schemas/other", "encoding": "JSON", "first_revision_id": "zz"},
             NotFound, "First revision")]
    for settings, error, message in bad:
        with pytest.raises(error, match=message):
            services.admin.create_topic(TOPIC, Topic(schema_settings=SchemaSettings.model_validate(settings)))


def test_publish_checks_every_message_and_marks_the_delivered_ones(services: Services, clock: FakeClock) -> None:
    first = services.schemas.create(SCHEMA, avro(V1)).head
    with_topic(services, encoding="JSON")
    with pytest.raises(MessageInvalid) as refused:
        publish(services, {"id": "a"}, {"id": 7})
    assert refused.value.index == 1 and "expected string" in refused.value.message
    clock.advance(1)
    second = services.schemas.commit(SCHEMA, avro(V2))
    publish(services, {"id": "a"}, {"id": "b", "qty": 2})  # each accepted by a revision in the range
    got = {m["message"]["attributes"]["googclient_schemarevisionid"] for m in delivered(services)}
    assert got == {first.revision_id, second.revision_id}


def test_revision_range_limits_what_publish_accepts(services: Services, clock: FakeClock) -> None:
    services.schemas.create(SCHEMA, avro(V1))
    clock.advance(1)
    second = services.schemas.commit(SCHEMA, avro(V2))
    with_topic(services, encoding="JSON", first_revision_id=second.revision_id)
    with pytest.raises(MessageInvalid):
        publish(services, {"id": "only v1"})
    [message] = (publish(services, {"id": "b", "qty": 1}), delivered(services))[1]
    assert message["message"]["attributes"] == {"googclient_schemaname": SCHEMA.path,
                                                "googclient_schemaencoding": "JSON",
                                                "googclient_schemarevisionid": second.revision_id}


def test_deleting_a_schema_in_use_stops_publishes(services: Services) -> None:
    services.schemas.create(SCHEMA, avro(V1))
    with_topic(services, encoding="JSON")
    services.schemas.delete(SCHEMA)
    assert services.admin.get_topic(TOPIC).schema_settings.schema_ == DELETED_SCHEMA  # type: ignore[union-attr]
    with pytest.raises(NotFound, match=r"Schema associated with topic deleted\."):
        publish(services, {"id": "a"})


def test_attach_and_detach(services: Services) -> None:
    services.schemas.create(SCHEMA, SchemaSpec(SchemaType.JSON_SCHEMA, '{"type": "object", "required": ["id"]}'))
    services.admin.create_topic(TOPIC, Topic())
    services.admin.create_subscription(SUB, subscription_request({"topic": TOPIC.path}, SUB))
    publish(services, {"no": "id"})  # no schema yet
    services.topic_schemas.attach(TOPIC, SchemaSettings(schema=SCHEMA.path, encoding="JSON"))
    with pytest.raises(MessageInvalid, match="'id' is a required property"):
        publish(services, {"no": "id"})
    publish(services, {"id": 1})
    services.topic_schemas.detach(TOPIC)
    publish(services, {"no": "id"})
    assert len(delivered(services)) == 3


def test_validate_message_and_the_compiled_cache(services: Services) -> None:
    services.schemas.create(SCHEMA, avro(V1))
    request = ValidateMessageRequest(b'{"id": "x"}', Encoding.JSON, schema=SCHEMA)
    for _ in range(3):
        services.schemas.validate_message(P, request)
    assert services.schemas.compiled.compiled == 1  # compiled once, then served from the cache
    with pytest.raises(MessageInvalid):
        services.schemas.validate_message(P, ValidateMessageRequest(b"{}", Encoding.JSON, spec=avro(V1)))
    with pytest.raises(InvalidArgument, match="Could not parse schema definition"):
        services.schemas.validate_schema(P, avro("{}"))


def test_revisions_made_at_the_same_instant_keep_their_order(services: Services) -> None:
    first = services.schemas.create(SCHEMA, avro(V1)).head
    second = services.schemas.commit(SCHEMA, avro(V2))  # the clock has not moved
    third = services.schemas.rollback(SCHEMA, first.revision_id)
    listed = services.schemas.list_revisions(SCHEMA, PageRequest(10)).items
    assert [r.revision_id for r in listed] == [third.revision_id, second.revision_id, first.revision_id]
    assert services.schemas.get(SCHEMA) == third


def test_a_schema_holds_at_most_twenty_revisions(services: Services, clock: FakeClock) -> None:
    first = services.schemas.create(SCHEMA, avro(V1)).head
    for _ in range(19):
        clock.advance(1)
        services.schemas.commit(SCHEMA, avro(V2))
    with pytest.raises(FailedPrecondition, match="at most 20 revisions"):
        services.schemas.commit(SCHEMA, avro(V1))
    with pytest.raises(FailedPrecondition):
        services.schemas.rollback(SCHEMA, first.revision_id)
    services.schemas.delete_revision(SCHEMA, first.revision_id)
    services.schemas.commit(SCHEMA, avro(V1))


def test_revisions_left_by_a_crashed_delete_do_not_come_back(services: Services,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    old = services.schemas.create(SCHEMA, avro(V2)).head
    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the process ends after the head went")

    monkeypatch.setattr(batch, "write_all", crash)
    with pytest.raises(RuntimeError):
        services.schemas.delete(SCHEMA)
    monkeypatch.undo()
    new = services.schemas.create(SCHEMA, avro(V1)).head
    revisions = services.schemas.list_revisions(SCHEMA, PageRequest(10)).items
    assert [r.revision_id for r in revisions] == [new.revision_id]
    with pytest.raises(NotFound):
        services.schemas.get(SCHEMA, old.revision_id)
    with_topic(services, encoding="JSON")
    with pytest.raises(MessageInvalid):
        publish(services, {"id": "a"}, {"id": 7})  # only the new schema's revision decides


def test_warm_publishes_read_the_schema_once_and_compile_it_once(services: Services,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    services.schemas.create(SCHEMA, avro(V1))
    with_topic(services, encoding="JSON")
    reads: list[names.Name] = []
    original = services.ctx.schemas.revisions

    def counted(name: names.Name) -> list[SchemaRevision]:
        reads.append(name)
        return original(name)

    monkeypatch.setattr(services.ctx.schemas, "revisions", counted)
    for _ in range(5):
        publish(services, {"id": "a"}, {"id": "b"})
    assert len(reads) == 1 and services.topic_schemas.compiled.compiled == 1
