"""Real requests through the payload 2.0 front door (app.handler, chalicelib/api/front_door.py) into the app on
moto: what an HTTP API or a function URL would send, answered as a 2.0 response."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

import app as app_module
from tests.functional.app_client import app_client

AMS_API = "amsapi42"
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "METRO_DIRECT_FANOUT": "1", "METRO_PULL_WAIT_SECONDS": "0", "METRO_AMS_API_ID": AMS_API}


def _call(method: str, path: str, body: Any = None, query: str = "", api: str = "googleapi",
          as_base64: bool = False) -> tuple[int, Any]:
    text = None if body is None else json.dumps(body)
    if text is not None and as_base64:
        text = base64.b64encode(text.encode()).decode()
    event = {"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
             "headers": {"content-type": "application/json", "host": f"{api}.example"},
             "requestContext": {"apiId": api, "requestId": "r", "stage": "$default",
                                "http": {"method": method, "path": path, "sourceIp": "198.51.100.7"}},
             "isBase64Encoded": as_base64}
    if text is not None:
        event["body"] = text
    answer = app_module.handler(event, None)
    assert "multiValueHeaders" not in answer
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None


@pytest.fixture(scope="module")
def served() -> Iterator[None]:
    with app_client(ENV):
        yield


def test_publish_and_pull_through_the_front_door(served: None) -> None:
    assert _call("PUT", "/v1/projects/fd/topics/t~1")[0] == 200
    assert _call("PUT", "/v1/projects/fd/subscriptions/sub1", {"topic": "projects/fd/topics/t~1"})[0] == 200
    status, published = _call("POST", "/v1/projects/fd/topics/t~1:publish",
                              {"messages": [{"data": base64.b64encode(b"hi").decode()}]}, as_base64=True)
    assert status == 200 and len(published["messageIds"]) == 1
    status, pulled = _call("POST", "/v1/projects/fd/subscriptions/sub1:pull/", {"maxMessages": 5})
    assert status == 200
    assert [base64.b64decode(m["message"]["data"]) for m in pulled["receivedMessages"]] == [b"hi"]


def test_a_repeated_query_key_is_refused_as_before(served: None) -> None:
    status, body = _call("GET", "/v1/projects/fd/topics", query="pageSize=1&pageSize=2")
    assert (status, body["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert _call("GET", "/v1/projects/fd/topics", query="pageSize=1")[0] == 200


def test_an_unknown_path_or_method_answers_not_found(served: None) -> None:
    assert _call("GET", "/v9/elsewhere")[1]["error"]["status"] == "NOT_FOUND"
    assert _call("OPTIONS", "/v1/projects/fd/topics")[1]["error"]["status"] == "NOT_FOUND"


def test_the_ams_api_speaks_the_ams_dialect(served: None) -> None:
    assert _call("PUT", "/v1/projects/fd/topics/amst", api=AMS_API)[0] == 200
    status, listed = _call("GET", "/v1/projects/fd/topics", api=AMS_API)
    assert status == 200
    assert "/projects/fd/topics/amst" in [t["name"] for t in listed["topics"]]
    status, google = _call("GET", "/v1/projects/fd/topics")
    assert "projects/fd/topics/amst" in [t["name"] for t in google["topics"]]
