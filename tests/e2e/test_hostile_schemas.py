"""Hostile schema definitions against the real local stack: ``schemas:validate``, ``schemas:validateMessage`` and
create answer 400, a publish to a topic whose stored revision is hostile is refused, and a listener on 127.0.0.1
(a thread of the test) that stands for the instance's metadata endpoint sees no connection.

A revision stored before definitions were read as data is played by writing its definition into the resources
table (the emulator's DynamoDB) after a benign one was created: the stack compiles it on the first publish.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from tests.e2e.google_helpers import PROJECT
from tests.stack import RunningStack
from tests.unit.test_hostile_schemas import DOUBLING, SECRET, Listener, remote_definitions

pytestmark = pytest.mark.e2e
PARENT = f"projects/{PROJECT}"
HOSTILE_CASES = ("http", "https", "file", "file-id", "id-base", "dynamic-ref", "in-definitions", "schema-keyword")


@pytest.fixture
def listener() -> Iterator[Listener]:
    listening = Listener()
    yield listening
    listening.close()


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"const": SECRET}))
    return path


def _post(stack: RunningStack, path: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(f"{stack.url}/v1/{path}", json=body, timeout=60)


def _refused(response: requests.Response) -> str:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert SECRET not in error["message"]
    return str(error["message"])


def _message(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


@pytest.mark.parametrize("case", HOSTILE_CASES)
def test_validate_validate_message_and_create_refuse_a_definition_that_points_outside_itself(
        case: str, stack: RunningStack, listener: Listener, secret: Path, unique: str) -> None:
    schema = {"type": "JSON_SCHEMA", "definition": json.dumps(remote_definitions(listener.url, secret)[case])}
    assert "Could not parse schema definition" in _refused(_post(stack, f"{PARENT}/schemas:validate",
                                                                 {"schema": schema}))
    for message in ({}, "x", [1]):
        _refused(_post(stack, f"{PARENT}/schemas:validateMessage",
                       {"schema": schema, "message": _message(message), "encoding": "JSON"}))
    _refused(_post(stack, f"{PARENT}/schemas?schemaId=h-{unique}", schema))
    assert listener.seen == []


def _store_definition(stack: RunningStack, name: str, revision_id: str, definition: str) -> None:
    """Write ``definition`` into a stored schema's head and revision items, as an older Metro could have kept it."""
    ddb = boto3.client("dynamodb", endpoint_url=stack.emulator_url, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    schema_id = name.rsplit("/", 1)[1]
    for key in ({"pk": {"S": f"project#{PROJECT}"}, "sk": {"S": f"schema#{schema_id}"}},
                {"pk": {"S": f"schema#{name}"}, "sk": {"S": f"rev#{revision_id}"}}):
        item = ddb.get_item(TableName="metro-resources", Key=key, ConsistentRead=True)["Item"]
        doc = {**json.loads(item["doc"]["S"]), "definition": definition}
        ddb.update_item(TableName="metro-resources", Key=key, UpdateExpression="SET doc = :doc",
                        ExpressionAttributeValues={":doc": {"S": json.dumps(doc)}})


def _topic_with_stored_definition(stack: RunningStack, unique: str, definition: Any) -> str:
    created = _post(stack, f"{PARENT}/schemas?schemaId=s-{unique}",
                    {"type": "JSON_SCHEMA", "definition": json.dumps({"type": "object"})})
    assert created.status_code == 200, created.text
    schema = created.json()
    _store_definition(stack, schema["name"], schema["revisionId"], json.dumps(definition))
    topic = f"{PARENT}/topics/t-{unique}"
    made = requests.put(f"{stack.url}/v1/{topic}", timeout=60,
                        json={"schemaSettings": {"schema": schema["name"], "encoding": "JSON"}})
    assert made.status_code == 200, made.text
    return topic


@pytest.mark.parametrize("case", ["http", "file", "id-base", "dynamic-ref"])
def test_publishing_to_a_topic_whose_stored_revision_points_outside_itself_is_refused_and_fetches_nothing(
        case: str, stack: RunningStack, listener: Listener, secret: Path, unique: str) -> None:
    topic = _topic_with_stored_definition(stack, unique, remote_definitions(listener.url, secret)[case])
    for message in ({}, "x", [1]):
        refused = _refused(_post(stack, f"{topic}:publish", {"messages": [{"data": _message(message)}]}))
        assert "Could not parse schema definition" in refused
    assert listener.seen == []


def test_a_backtracking_pattern_is_matched_in_linear_time_on_publish(stack: RunningStack, unique: str) -> None:
    """Python's re needed 0.8 s for 25 characters against ^(a+)+$ and doubled with each more; RE2 reads the
    100,001 characters once. ECMA-262's "$" (the end of the text, not before a final newline) shows it is RE2."""
    created = _post(stack, f"{PARENT}/schemas?schemaId=p-{unique}", {"type": "JSON_SCHEMA", "definition": json.dumps(
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}})})
    assert created.status_code == 200, created.text
    topic = f"{PARENT}/topics/p-{unique}"
    made = requests.put(f"{stack.url}/v1/{topic}", timeout=60,
                        json={"schemaSettings": {"schema": created.json()["name"], "encoding": "JSON"}})
    assert made.status_code == 200, made.text
    for bad in ("a" * 100_000 + "!", "aaa\n"):
        assert "does not match" in _refused(_post(stack, f"{topic}:publish",
                                                  {"messages": [{"data": _message({"s": bad})}]}))
    ok = _post(stack, f"{topic}:publish", {"messages": [{"data": _message({"s": "a" * 100_000})}]})
    assert ok.status_code == 200, ok.text


def test_a_stored_revision_that_fans_out_with_the_message_refuses_it_within_its_budget(
        stack: RunningStack, unique: str) -> None:
    topic = _topic_with_stored_definition(stack, unique, DOUBLING)
    ok = _post(stack, f"{topic}:publish", {"messages": [{"data": _message([[[]]])}]})
    assert ok.status_code == 200, ok.text
    deep = json.loads("[" * 18 + "]" * 18)
    assert "units of work" in _refused(_post(stack, f"{topic}:publish", {"messages": [{"data": _message(deep)}]}))
