"""What fuzzing Metro's OpenAPI description found (bench/fuzz.py), each kept as a regression test against the
real local stack: refusals made before a route's handler runs (by the HTTP server or by Chalice) come in
Google's error envelope, invalid project ids are refused, and setIamPolicy without a policy changes nothing.
The description itself is served at /openapi.json and /docs."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from bench.fuzz_checks import envelope_problem
from tests.stack import RunningStack

pytestmark = pytest.mark.e2e
PROJECT = "e2e-project"


def refused(resp: requests.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["Content-Type"].startswith("application/json")
    assert envelope_problem(status, resp.json()) == ""
    error: dict[str, Any] = resp.json()["error"]
    assert error["status"] == code
    return error


def raw_exchange(stack: RunningStack, data: bytes) -> tuple[int, Any]:
    """Send bytes as they are (no client would send these); the status and the JSON body of the answer. A
    request line the server cannot read gets an HTTP/0.9-style answer: the body alone."""
    parts = urlsplit(stack.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(data)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    if not received.startswith(b"HTTP/"):
        body = json.loads(received)
        return int(body["error"]["code"]), body
    head, _, rest = received.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(rest)


def test_a_method_no_route_serves_is_not_found_in_the_envelope(stack: RunningStack) -> None:
    refused(requests.request("TRACE", f"{stack.url}/v1/projects/{PROJECT}/topics", timeout=10), 404, "NOT_FOUND")
    refused(requests.post(f"{stack.url}/openapi.json", json={}, timeout=10), 404, "NOT_FOUND")  # GET-only route


def test_an_unreadable_request_line_is_invalid_argument_in_the_envelope(stack: RunningStack) -> None:
    for data in (b"GET /v1 /projects HTTP/1.1 extra\r\n\r\n",
                 b"GET /v1/projects HTTP/1.1\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n"):
        status, body = raw_exchange(stack, data)
        assert status == 400
        assert envelope_problem(400, body) == ""


def test_a_media_type_metro_does_not_read_is_invalid_argument(stack: RunningStack) -> None:
    resp = requests.post(f"{stack.url}/v1/projects/{PROJECT}/topics/t-media:publish", files={"a": b"b"}, timeout=10)
    assert "multipart/form-data" in str(resp.request.headers["Content-Type"])
    refused(resp, 400, "INVALID_ARGUMENT")


@pytest.mark.parametrize("path", ["/v1/projects/%C2%84", "/v1/projects/%C2%84:pushIdentities",
                                  "/v1/projects/bad!id/topics", "/v1/projects/bad!id/members",
                                  "/v1/projects/bad!id/members/someone"])
def test_an_invalid_project_id_is_refused(stack: RunningStack, path: str) -> None:
    refused(requests.get(stack.url + path, timeout=10), 400, "INVALID_ARGUMENT")


def test_an_invalid_project_id_is_not_written(stack: RunningStack) -> None:
    refused(requests.put(f"{stack.url}/v1/projects/%C2%84", json={"description": "x"}, timeout=10), 400,
            "INVALID_ARGUMENT")
    listed = requests.get(f"{stack.url}/v1/projects", timeout=10).json()["projects"]
    assert "\u0084" not in [p["name"] for p in listed]


def test_set_iam_policy_without_a_policy_changes_nothing(stack: RunningStack, unique: str) -> None:
    topic = f"{stack.url}/v1/projects/{PROJECT}/topics/{unique}"
    assert requests.put(topic, json={}, timeout=10).status_code == 200
    before = requests.get(f"{topic}:getIamPolicy", timeout=10).json()
    for body in ({}, {"policy": None}):
        refused(requests.post(f"{topic}:setIamPolicy", json=body, timeout=10), 400, "INVALID_ARGUMENT")
    assert requests.get(f"{topic}:getIamPolicy", timeout=10).json() == before


def test_the_description_and_its_page_are_served(stack: RunningStack) -> None:
    spec = requests.get(f"{stack.url}/openapi.json", timeout=10)
    assert spec.status_code == 200 and spec.json()["openapi"].startswith("3.")
    assert "post" in spec.json()["paths"]["/v1/projects/{project}/topics/{topic}:publish"]
    page = requests.get(f"{stack.url}/docs", timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "/v1/projects/{project}/subscriptions/{subscription}:pull" in page.text


@pytest.mark.parametrize("path", ["/v1/users/nobody:refreshToken", "/v1/projects/e2e-project/members/x:remove",
                                  "/v1/projects/e2e-project/subscriptions/s-any:detach"])
def test_a_body_that_is_not_a_json_object_is_refused_where_the_body_is_unused(stack: RunningStack,
                                                                               path: str) -> None:
    for raw in (b"[null, null]", b"3", b'"text"'):
        resp = requests.post(stack.url + path, data=raw, headers={"Content-Type": "application/json"}, timeout=10)
        assert "JSON object" in refused(resp, 400, "INVALID_ARGUMENT")["message"]


def test_a_member_body_with_wrongly_typed_user_fields_is_refused(stack: RunningStack) -> None:
    path = f"{stack.url}/v1/projects/{PROJECT}/members/fuzzed-member"
    for body in ({"organization": True}, {"service_roles": True}, {"email": "not an email"}):
        refused(requests.post(path, json=body, timeout=10), 400, "INVALID_ARGUMENT")
    assert requests.get(path, timeout=10).status_code == 404  # nothing was created


def test_a_superscript_digit_where_a_number_may_stand_is_invalid_argument(stack: RunningStack, unique: str) -> None:
    """"²" passes str.isdigit but not int(): a schema type or a user page size written with it was a 500."""
    schemas = f"{stack.url}/v1/projects/{PROJECT}/schemas?schemaId={unique}"
    refused(requests.post(schemas, json={"type": "²", "definition": "{}"}, timeout=10), 400, "INVALID_ARGUMENT")
    refused(requests.get(f"{stack.url}/v1/users", params={"pageSize": "²"}, timeout=10), 400, "INVALID_ARGUMENT")
    assert requests.get(f"{stack.url}/v1/projects/{PROJECT}/schemas/{unique}", timeout=10).status_code == 404


def test_a_boolean_schema_encoding_is_refused_and_nothing_is_created(stack: RunningStack, unique: str) -> None:
    """A boolean ``encoding`` was read as the number 1 (JSON) and the topic created."""
    topic = f"{stack.url}/v1/projects/{PROJECT}/topics/{unique}"
    refused(requests.put(topic, json={"schemaSettings": {"encoding": True}}, timeout=10), 400, "INVALID_ARGUMENT")
    assert requests.get(topic, timeout=10).status_code == 404
