"""``GET /v1/status`` against moto: every store's probe passes on a bootstrapped stack; a missing table or
bucket makes the route answer 503 UNAVAILABLE naming the store, with one error-level log line naming the AWS
operation and code. Before, the route said "ok" whatever the stores did."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.runtime import Services
from chalicelib.store import aws


@pytest.fixture
def http(services: Services) -> Iterator[tuple[Client, Services]]:
    runtime.reset()
    with Client(app, stage_name="local") as client:
        yield client, runtime.services()
    runtime.reset()


def test_a_healthy_stack_answers_ok(http: tuple[Client, Services]) -> None:
    client, _ = http
    answer = client.http.get("/v1/status")
    assert answer.status_code == 200
    assert json.loads(answer.body) == {"status": "ok", "push_functionality": "enabled", "push_servers": []}


def test_a_missing_table_is_unavailable_and_logged(http: tuple[Client, Services],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    client, built = http
    config = built.ctx.config
    aws.dynamodb(config).delete_table(TableName=config.messages_table)
    with caplog.at_level(logging.ERROR, logger="chalicelib.store.health"):
        answer = client.http.get("/v1/status")
    error = json.loads(answer.body)["error"]
    assert (answer.status_code, error["status"]) == (503, "UNAVAILABLE")
    assert "messages table" in error["message"] and config.messages_table not in error["message"]
    [line] = [r for r in caplog.records if r.name == "chalicelib.store.health"]
    assert line.levelno == logging.ERROR
    assert "GetItem" in line.getMessage() and "ResourceNotFoundException" in line.getMessage()


def test_a_missing_bucket_fails_its_probe(services: Services) -> None:
    config = services.ctx.config
    aws.s3(config).delete_bucket(Bucket=config.bucket)
    assert services.health.status().failing == ("bucket",)


def test_each_probe_passes_on_the_bootstrapped_stack(services: Services) -> None:
    probes = services.ctx.probes
    assert set(probes.names) == {"resources table", "messages table", "leases table", "bucket", "queues"}
    assert all(probes.probe(name) for name in probes.names)
