"""Schemas through the real clients: google-cloud-pubsub's SchemaServiceClient over REST (integer enums) and
google-api-python-client's discovery document, against the real local stack."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import googleapiclient.errors
import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.pubsub_v1 import Encoding, PubsubMessage, Schema, SchemaServiceClient, SchemaSettings, Topic
from google.pubsub_v1 import SchemaView as View

from chalicelib.core.schemas.protobuf import ProtoSchema
from tests.e2e.google_helpers import PROJECT, google_status, pull_n, sub_path, topic_path

pytestmark = pytest.mark.e2e
PARENT = f"projects/{PROJECT}"
AVRO = json.dumps({"type": "record", "name": "Order", "namespace": "metro.e2e", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": ["null", "int"], "default": None}]})
AVRO_V2 = json.dumps({"type": "record", "name": "Order", "namespace": "metro.e2e", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]})
PROTO = 'syntax = "proto3";\npackage metro.e2e;\nmessage Order {\n  string id = 1;\n  optional int32 qty = 2;\n}\n'
JSON_SCHEMA = json.dumps({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}})


@pytest.fixture(scope="module")
def schemas(client_options: dict[str, str]) -> SchemaServiceClient:
    return SchemaServiceClient(transport="rest", client_options=client_options,
                               credentials=AnonymousCredentials())  # type: ignore[no-untyped-call]


def _avro_binary(value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(AVRO)), value)
    return out.getvalue()


def _proto_binary(**fields: Any) -> bytes:
    return bytes(ProtoSchema(PROTO).message_class(**fields).SerializeToString())


def test_schema_lifecycle(schemas: SchemaServiceClient, unique: str) -> None:
    name = f"{PARENT}/schemas/sc-{unique}"
    first = schemas.create_schema(parent=PARENT, schema=Schema(type_=Schema.Type.AVRO, definition=AVRO),
                                  schema_id=f"sc-{unique}")
    assert (first.name, first.type_, first.definition, len(first.revision_id)) == (name, Schema.Type.AVRO, AVRO, 8)
    with pytest.raises(gexc.Conflict):
        schemas.create_schema(parent=PARENT, schema=Schema(type_=Schema.Type.AVRO, definition=AVRO),
                              schema_id=f"sc-{unique}")
    basic = schemas.get_schema(request={"name": name, "view": View.BASIC})
    assert (basic.definition, basic.revision_id) == ("", first.revision_id)
    second = schemas.commit_schema(name=name, schema=Schema(type_=Schema.Type.AVRO, definition=AVRO_V2))
    assert schemas.get_schema(name=name).revision_id == second.revision_id
    revisions = list(schemas.list_schema_revisions(request={"name": name, "view": View.FULL, "page_size": 1}))
    assert [(r.revision_id, r.definition) for r in revisions] == [(second.revision_id, AVRO_V2),
                                                                 (first.revision_id, AVRO)]
    third = schemas.rollback_schema(name=name, revision_id=first.revision_id)
    assert third.definition == AVRO and third.revision_id not in (first.revision_id, second.revision_id)
    assert schemas.get_schema(name=f"{name}@{second.revision_id}").definition == AVRO_V2
    schemas.delete_schema_revision(name=name, revision_id=second.revision_id)
    assert [r.revision_id for r in schemas.list_schema_revisions(name=name)] == [third.revision_id,
                                                                                 first.revision_id]
    assert name in [s.name for s in schemas.list_schemas(parent=PARENT)]
    schemas.delete_schema(name=name)
    with pytest.raises(gexc.NotFound):
        schemas.get_schema(name=name)


def test_validate_schema_and_message(schemas: SchemaServiceClient) -> None:
    schemas.validate_schema(parent=PARENT, schema=Schema(type_=Schema.Type.PROTOCOL_BUFFER, definition=PROTO))
    for bad in (Schema(type_=Schema.Type.AVRO, definition='{"type": "record", "name": "R"}'),
                Schema(type_=Schema.Type.PROTOCOL_BUFFER, definition='syntax = "proto3"; service S {}')):
        with pytest.raises(gexc.BadRequest) as refused:
            schemas.validate_schema(parent=PARENT, schema=bad)
        assert google_status(refused.value) == "INVALID_ARGUMENT"
        assert "Could not parse schema definition: " in refused.value.message
    inline = Schema(type_=Schema.Type.AVRO, definition=AVRO)
    schemas.validate_message(request={"parent": PARENT, "schema": inline, "message": b'{"id": "a", "qty": null}',
                                      "encoding": Encoding.JSON})
    schemas.validate_message(request={"parent": PARENT, "schema": inline, "message": _avro_binary({"id": "a"}),
                                      "encoding": Encoding.BINARY})
    with pytest.raises(gexc.BadRequest, match="qty"):
        schemas.validate_message(request={"parent": PARENT, "schema": inline, "message": b'{"id": "a", "qty": 3}',
                                          "encoding": Encoding.JSON})


CASES = {
    "avro-json": (Schema.Type.AVRO, AVRO, Encoding.JSON, b'{"id": "a", "qty": {"int": 2}}', b'{"qty": null}'),
    "avro-binary": (Schema.Type.AVRO, AVRO, Encoding.BINARY, _avro_binary({"id": "a", "qty": 2}), b"\x02"),
    "proto-json": (Schema.Type.PROTOCOL_BUFFER, PROTO, Encoding.JSON, b'{"id": "a", "qty": 2}', b'{"size": 1}'),
    "proto-binary": (Schema.Type.PROTOCOL_BUFFER, PROTO, Encoding.BINARY, _proto_binary(id="a", qty=2), b"\xff\x01"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_publish_is_checked_and_delivered_with_the_schema_attributes(
        case: str, schemas: SchemaServiceClient, publisher: Any, subscriber: Any, gapic: Any, unique: str) -> None:
    kind, definition, encoding, good, bad = CASES[case]
    schema = schemas.create_schema(parent=PARENT, schema=Schema(type_=kind, definition=definition),
                                   schema_id=f"sp-{unique}")
    topic, sub = topic_path(f"tp-{unique}"), sub_path(f"sp-{unique}")
    created = publisher.create_topic(request=Topic(name=topic, schema_settings=SchemaSettings(
        schema=schema.name, encoding=encoding)))
    assert created.schema_settings.encoding == encoding
    subscriber.create_subscription(name=sub, topic=topic)
    with pytest.raises(gexc.BadRequest) as refused:
        gapic.publish(topic=topic, messages=[PubsubMessage(data=good), PubsubMessage(data=bad)])
    assert google_status(refused.value) == "INVALID_ARGUMENT" and "(message 1)" in refused.value.message
    gapic.publish(topic=topic, messages=[PubsubMessage(data=good, attributes={"k": "v"})])
    [got] = pull_n(subscriber, sub, 1)
    assert got.message.data == good
    assert dict(got.message.attributes) == {"k": "v", "googclient_schemaname": schema.name,
                                            "googclient_schemaencoding": Encoding(encoding).name,
                                            "googclient_schemarevisionid": schema.revision_id}


def _http_error(call: Any) -> dict[str, Any]:
    with pytest.raises(googleapiclient.errors.HttpError) as err:
        call.execute()
    return dict(json.loads(err.value.content)["error"])


def test_discovery_json_schema_and_a_deleted_schema(discovery: Any, unique: str) -> None:
    api, topics = discovery.projects().schemas(), discovery.projects().topics()
    name, topic = f"{PARENT}/schemas/sj-{unique}", topic_path(f"tj-{unique}")
    created = api.create(parent=PARENT, schemaId=f"sj-{unique}",
                         body={"type": "JSON_SCHEMA", "definition": JSON_SCHEMA}).execute()
    assert created["type"] == "JSON_SCHEMA" and api.get(name=name).execute()["definition"] == JSON_SCHEMA
    assert api.validateMessage(parent=PARENT, body={"name": name, "message": "eyJpZCI6ICJhIn0=",
                                                    "encoding": "JSON"}).execute() == {}
    assert "'id' is a required property" in _http_error(api.validateMessage(
        parent=PARENT, body={"name": name, "message": "e30=", "encoding": "JSON"}))["message"]
    topics.create(name=topic, body={"schemaSettings": {"schema": name, "encoding": "JSON"}}).execute()
    error = _http_error(topics.publish(topic=topic, body={"messages": [{"data": "e30="}]}))
    assert error["status"] == "INVALID_ARGUMENT" and "(message 0)" in error["message"]
    assert topics.publish(topic=topic, body={"messages": [{"data": "eyJpZCI6ICJhIn0="}]}).execute()["messageIds"]
    api.delete(name=name).execute()
    assert topics.get(topic=topic).execute()["schemaSettings"]["schema"] == "_deleted-schema_"
    error = _http_error(topics.publish(topic=topic, body={"messages": [{"data": "eyJpZCI6ICJhIn0="}]}))
    assert (error["status"], error["message"]) == ("NOT_FOUND", "Schema associated with topic deleted.")
    error = _http_error(topics.create(name=topic_path(f"tk-{unique}"),
                                      body={"schemaSettings": {"schema": name, "encoding": "JSON"}}))
    assert (error["status"], error["message"]) == ("NOT_FOUND", "Schema could not be found")


BAD_REQUESTS = [
    ("POST", "/schemas?schemaId=bad-body", [1, 2], 400),
    ("POST", "/schemas?schemaId=bad-type", {"type": "XML", "definition": "{}"}, 400),
    ("POST", "/schemas?schemaId=bad-type-number", {"type": 9, "definition": "{}"}, 400),
    ("POST", "/schemas?schemaId=bad-definition", {"type": "AVRO", "definition": 5}, 400),
    ("POST", "/schemas?schemaId=unknown-field", {"type": "AVRO", "definition": "{}", "bogus": 1}, 400),
    ("POST", "/schemas?schemaId=x", {"type": "AVRO", "definition": '"string"'}, 400),  # id too short
    ("POST", "/schemas?schemaId=huge-definition", {"type": "JSON_SCHEMA", "definition": " " * 400_000 + "{}"}, 400),
    ("POST", "/schemas?schemaId=deep-proto", {"type": "PROTOCOL_BUFFER",
                                              "definition": "message M {" * 50 + "}" * 50}, 400),
    ("GET", "/schemas?view=SIDEWAYS", None, 400),
    ("GET", "/schemas?pageSize=x", None, 400),
    ("GET", "/schemas?pageToken=forged", None, 400),
    ("GET", "/schemas/missing-schema@", None, 404),
    ("GET", "/schemas/missing-schema@x@y", None, 404),
    ("POST", "/schemas/missing-schema:rollback", [], 400),
    ("POST", "/schemas/missing-schema:commit", {"schema": []}, 400),
    ("DELETE", "/schemas/missing-schema:deleteRevision", None, 400),
    ("PUT", "/schemas/missing-schema", {}, 404),
    ("POST", "/schemas:validateMessage", {"name": "projects/p/schemas/s", "message": "%%%", "encoding": "JSON"}, 400),
    ("POST", "/schemas:validateMessage", {"name": "not a name", "message": "", "encoding": "JSON"}, 400),
    ("POST", "/schemas:validateMessage", {"schema": {"type": "AVRO", "definition": '"int"'}, "message": "MQ==",
                                          "encoding": "XML"}, 400),
    ("POST", "/schemas:frobnicate", {}, 404),
    ("POST", "/elsewhere:validate", {}, 404),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), BAD_REQUESTS, ids=[f"{m} {p}" for m, p, *_ in
                                                                                  BAD_REQUESTS])
def test_bad_schema_requests_get_google_errors(client_options: dict[str, str], method: str, path: str, body: Any,
                                               status: int) -> None:
    resp = requests.request(method, f"{client_options['api_endpoint']}/v1/{PARENT}{path}", json=body, timeout=30)
    assert resp.status_code == status, resp.text
    assert set(resp.json()["error"]) >= {"code", "message", "status"}
