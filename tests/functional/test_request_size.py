"""The deployed request-size limit (METRO_MAX_REQUEST_BYTES) is checked before the body is parsed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.runtime import Services


@pytest.fixture
def http(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    monkeypatch.setenv("METRO_MAX_REQUEST_BYTES", "2000")
    runtime.reset()
    with Client(app, stage_name="local") as client:
        yield client
    runtime.reset()


def test_a_body_over_the_deployed_limit_is_invalid_argument(http: Client) -> None:
    headers = {"Content-Type": "application/json"}
    assert http.http.put("/v1/projects/size-project/topics/size-topic", body="{}", headers=headers).status_code == 200
    small = json.dumps({"messages": [{"data": "eA=="}]})
    ok = http.http.post("/v1/projects/size-project/topics/size-topic:publish", body=small, headers=headers)
    assert ok.status_code == 200
    big = json.dumps({"messages": [{"data": "eA==" * 600}]})  # 2,400 bytes of data alone
    refused = http.http.post("/v1/projects/size-project/topics/size-topic:publish", body=big, headers=headers)
    error = json.loads(refused.body)["error"]
    assert (refused.status_code, error["status"]) == (400, "INVALID_ARGUMENT")
    assert "exceeds the limit" in error["message"]
