"""The deployed stack's log lines and metrics, with the app on moto in-process (keys mode): no token in any log line
at DEBUG, the ids on each line, and the metrics of publish, pull, ack, push, maintenance and seeks."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import logging
import secrets
import types
from collections.abc import Iterator
from typing import Any

import pytest
from chalice.app import Request
from chalice.test import Client

import app as app_module
from chalicelib.api import routes
from chalicelib.api.parsing import subscription_request
from chalicelib.core import names
from chalicelib.core.replay.seek_jobs import SeekJob
from chalicelib.core.wire.models import Topic
from chalicelib.delivery.push import PushDelivery
from chalicelib.observability import catalog, logs, metrics
from chalicelib.runtime import Services
from chalicelib.service.seek_worker import SeekWorker
from tests.functional.app_client import app_client
from tests.functional.conftest import FakeClock
from tests.functional.test_push_handler import FakeEndpoint, msg, publish, sqs_event, sub, topic
from tests.observed import emf_lines, metrics_on, restored_logging, total  # noqa: F401 (fixtures)

ADMIN_KEY = "observability-admin-key-0123456789abcdefgh"
ACK_SECRET = secrets.token_urlsafe(32)
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "METRO_PULL_WAIT_SECONDS": "0", "METRO_PULL_LINGER_MS": "0",
       "METRO_AUTH": "keys", "METRO_ADMIN_KEY": ADMIN_KEY, "METRO_ACK_SECRET": ACK_SECRET}
P, T, S = "obs", "events", "events-sub"
METRO = {"service": "metro"}
CTX = types.SimpleNamespace(aws_request_id="lambda-req-9", function_name="metro-dev-maintenance",
                            memory_limit_in_mb=512)


def call(client: Client, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    raw = b"" if body is None else json.dumps(body).encode()
    resp = client.http.request(method, path, headers={"Content-Type": "application/json", **(headers or {})},
                               body=raw)
    return resp.status_code, json.loads(resp.body or b"{}")


def drive(client: Client) -> list[str]:
    """Every credential form, a refused token, publish, pull, acknowledge; the secrets that went by."""
    admin = {"x-api-key": ADMIN_KEY}
    assert call(client, "POST", f"/v1/projects/{P}", {"description": "o"}, admin)[0] == 200
    status, made = call(client, "POST", "/v1/users/ops", {"projects": [{"project": P, "roles": ["project_admin"]}]},
                        admin)
    assert status == 200
    token = made["token"]
    assert call(client, "PUT", f"/v1/projects/{P}/topics/{T}", {}, {"Authorization": f"Bearer {token}"})[0] == 200
    assert call(client, "PUT", f"/v1/projects/{P}/subscriptions/{S}", {"topic": f"projects/{P}/topics/{T}"},
                {"x-goog-api-key": token})[0] == 200
    data = base64.b64encode(b"hello").decode()
    status, published = call(client, "POST", f"/v1/projects/{P}/topics/{T}:publish?key={token}",
                             {"messages": [{"data": data}, {"data": data}, {"data": data}]})
    assert status == 200 and len(published["messageIds"]) == 3
    status, pulled = call(client, "POST", f"/v1/projects/{P}/subscriptions/{S}:pull", {"maxMessages": 10},
                          {"x-api-key": token})
    acks = [m["ackId"] for m in pulled.get("receivedMessages", [])]
    assert status == 200 and len(acks) == 3
    assert call(client, "POST", f"/v1/projects/{P}/subscriptions/{S}:acknowledge", {"ackIds": acks},
                {"x-api-key": token})[0] == 200
    wrong = "wrong-token-" + secrets.token_urlsafe(24)
    assert call(client, "GET", f"/v1/projects/{P}/topics/{T}", None, {"x-api-key": wrong})[0] == 401
    assert call(client, "GET", f"/v1/projects/{P}/topics/{T}?key={wrong}")[0] == 401
    return [ADMIN_KEY, ACK_SECRET, token, wrong]


@pytest.fixture
def chatty_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that logs everything of each request at DEBUG (headers, query, body) and its failures."""
    original = routes.dispatch
    log = logging.getLogger("chalicelib.api.chatty")

    def dispatch(request: Request, route: str, params: dict[str, str]) -> Any:
        log.debug("request %s %s headers=%s query=%s body=%s", request.method, request.path, dict(request.headers),
                  request.query_params, request.raw_body.decode() if request.raw_body else "")
        response = original(request, route, params)
        if response.status_code >= 400:
            log.error("refused %s headers=%s", request.path, dict(request.headers))
        log.debug("answer %s", response.body)
        return response

    monkeypatch.setattr(routes, "dispatch", dispatch)


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.usefixtures("restored_logging", "chatty_dispatch")
def test_no_token_is_logged_at_debug(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    buf = io.StringIO()
    with app_client(ENV) as client:
        logs.configure(fmt, "DEBUG", buf)
        tokens = drive(client)
    captured = capsys.readouterr()
    text = buf.getvalue() + captured.out + captured.err
    assert text.count("request ") >= 8  # the chatty module's lines are there, each redacted
    for token in tokens:
        assert token not in text
    if fmt == "json":
        lines = [json.loads(line) for line in buf.getvalue().splitlines()]
        requests = [line for line in lines if line["message"].startswith("request ")]
        assert all(line["service"] == "metro" and line["correlation_id"] and line["function_request_id"]
                   for line in requests)
        assert len({line["correlation_id"] for line in requests}) == len(requests)  # one per call


@pytest.mark.usefixtures("restored_logging", "chatty_dispatch")
def test_the_tokens_would_be_seen_without_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same calls with redaction off do write every token, so the test above can see them."""
    monkeypatch.setattr(logs, "redact", lambda text: text)
    buf = io.StringIO()
    with app_client(ENV) as client:
        logs.configure("json", "DEBUG", buf)
        tokens = drive(client)
    assert all(token in buf.getvalue() for token in tokens if token != ACK_SECRET)  # the ack secret is never sent


@pytest.mark.usefixtures("metrics_on")
def test_publish_pull_and_ack_metrics_are_flushed_per_request(capsys: pytest.CaptureFixture[str]) -> None:
    with app_client(ENV) as client:
        capsys.readouterr()
        drive(client)
    lines = emf_lines(capsys.readouterr().out)
    sub_path, topic_path = f"projects/{P}/subscriptions/{S}", f"projects/{P}/topics/{T}"
    assert total(lines, "PublishRequests", **METRO) == 1 and total(lines, "PublishMessages", **METRO) == 3
    assert total(lines, "PullRequests", **METRO) == 1 and total(lines, "PullMessages", **METRO) == 3
    assert total(lines, "AcknowledgeRequests", **METRO) == 1 and total(lines, "AcknowledgeMessages", **METRO) == 3
    assert total(lines, "PublishMessages", **METRO, Topic=topic_path) == 3  # per resource: the setting is on
    assert total(lines, "PullMessages", **METRO, Subscription=sub_path) == 3
    assert total(lines, "AcknowledgeMessages", **METRO, Subscription=sub_path) == 3
    [age] = [line.values[catalog.OLDEST_UNACKED_AGE] for line in lines if line.dimensions == METRO
             and catalog.OLDEST_UNACKED_AGE in line.values]
    assert len(age) == 1 and 0 <= age[0] < 60  # the pull's oldest message, just published
    assert total(lines, catalog.OLDEST_UNACKED_AGE, **METRO, Subscription=sub_path) == age[0]
    shared = [line for line in lines if line.dimensions == METRO]
    assert len(shared) == 3  # publish, pull, acknowledge: one flush each (the other calls record nothing)
    assert all(line.namespace == catalog.NAMESPACE for line in lines)


@pytest.mark.usefixtures("metrics_on")
def test_a_failing_metrics_flush_never_fails_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise OSError("stdout closed")

    monkeypatch.setattr(metrics._METRICS, "flush_metrics", broken)
    monkeypatch.setattr(metrics._METRICS, "add_metric", broken)
    with app_client(ENV) as client:
        drive(client)  # every call answered as without metrics


@pytest.mark.usefixtures("metrics_on", "restored_logging")
def test_maintenance_beats_and_reports_its_seeks(capsys: pytest.CaptureFixture[str]) -> None:
    buf = io.StringIO()
    with app_client(ENV):
        logs.configure("json", "INFO", buf)
        capsys.readouterr()
        app_module.maintenance({"id": "evt-42", "time": "2026-11-26T10:07:00Z", "detail-type": "Scheduled Event",
                                "source": "aws.events", "account": "1", "region": "us-east-1", "resources": [],
                                "detail": {}, "version": "0"}, CTX)
    lines = emf_lines(capsys.readouterr().out)
    assert total(lines, catalog.MAINTENANCE_HEARTBEAT, **METRO) == 1
    assert total(lines, catalog.SEEK_RUNNING, **METRO) == 0 and total(lines, catalog.SEEK_STALLED, **METRO) == 0
    assert [line for line in lines if catalog.SEEK_PROGRESS_AGE in line.values]


def _job(subscription: str, started: float, **changes: Any) -> SeekJob:
    return SeekJob(subscription, "seek-1", 1, "https://q/old", 2, "https://q/new", 0, 0, started, **changes)


@pytest.mark.usefixtures("metrics_on")
def test_a_stalled_seek_is_counted_and_its_age_reported(services: Services, clock: FakeClock,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    invoked: list[dict[str, Any]] = []
    ctx = dataclasses.replace(services.ctx, invoker=types.SimpleNamespace(
        invoke=lambda function, event: invoked.append(event)))
    ctx.seek_jobs.start(_job("projects/p/subscriptions/slow", clock(), background=True, updated=clock()))
    clock.advance(ctx.config.seek_lease_seconds * 3)
    assert SeekWorker(ctx).resume_stalled() == 1 and len(invoked) == 1
    metrics.flush()
    lines = emf_lines(capsys.readouterr().out)
    assert total(lines, catalog.SEEK_RUNNING, **METRO) == 1 and total(lines, catalog.SEEK_STALLED, **METRO) == 1
    [age] = [line.values[catalog.SEEK_PROGRESS_AGE] for line in lines if catalog.SEEK_PROGRESS_AGE in line.values]
    assert age == [pytest.approx(ctx.config.seek_lease_seconds * 3)]


@pytest.fixture
def push_ready(services: Services, clock: FakeClock) -> Iterator[Services]:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "pushConfig": {"pushEndpoint": "http://127.0.0.1:9/hook"}}, sub()))
    clock.advance(1)
    yield services


@pytest.mark.usefixtures("metrics_on")
def test_push_counts_deliveries_acks_failures_and_times_each_post(push_ready: Services, clock: FakeClock,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    publish(push_ready, msg(b"a"), msg(b"b"))
    event = sqs_event(push_ready)
    clock.advance(30)
    PushDelivery(push_ready.ctx, post=FakeEndpoint(500, 204), sleep=clock.advance).handle(event)
    metrics.flush()
    lines = emf_lines(capsys.readouterr().out)
    assert total(lines, catalog.PUSH_DELIVERIES, **METRO) == 2
    assert total(lines, catalog.PUSH_ACKED, **METRO) == 1 and total(lines, catalog.PUSH_FAILURES, **METRO) == 1
    assert total(lines, catalog.PUSH_FAILURE_RATE, **METRO) == 50.0
    [age] = [line.values[catalog.OLDEST_UNACKED_AGE] for line in lines if line.dimensions == METRO
             and catalog.OLDEST_UNACKED_AGE in line.values]
    assert age == [pytest.approx(30, abs=0.01)]  # published 30 s before the push
    [latency] = [line.values[catalog.PUSH_LATENCY] for line in lines if catalog.PUSH_LATENCY in line.values]
    assert len(latency) == 2
    per_sub = {"service": "metro", "Subscription": names.make("push-project", "subscriptions", "sub-a").path}
    assert total(lines, catalog.PUSH_FAILURES, **per_sub) == 1
