"""Log lines and metrics (chalicelib/observability/): redaction, the JSON line's ids, the invocation wrapper, and
the metrics' names, dimensions and failure handling, without AWS."""

from __future__ import annotations

import io
import json
import logging
import types
from typing import Any

import pytest

from chalicelib.core.errors import NotFound, Unavailable
from chalicelib.observability import catalog, handlers, logs, metrics
from tests.observed import emf_lines, metrics_on, restored_logging, total  # noqa: F401 (fixtures)

TOKEN = "tok-0123456789abcdefghijklmnopqrstuvwxyzAB"
SECRETS = [
    f"Authorization: Bearer {TOKEN}",
    f"{{'authorization': 'Bearer {TOKEN}', 'x-api-key': '{TOKEN}'}}",
    f'{{"x-goog-api-key": "{TOKEN}"}}',
    f"GET /v1/projects/p/topics/t?key={TOKEN}&alt=json",
    f"https://host/v1/projects/p/topics?foo=1&key={TOKEN}",
    f"query {{'key': '{TOKEN}'}}",
    f"query {{'key': ['{TOKEN}']}}",
    f'body {{"token": "{TOKEN}", "name": "u"}}',
    f"ack_secret={TOKEN} admin_key={TOKEN} signing_key={TOKEN}",
    f"METRO_ADMIN_KEY={TOKEN}",
    f"POST failed: key={TOKEN}",
    f"push token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ{TOKEN}In0.c2lnbmF0dXJl",
    f"-----BEGIN RSA PRIVATE KEY-----\nMIIE{TOKEN}\n-----END RSA PRIVATE KEY-----",
    f"Basic {TOKEN}",
]
CTX = types.SimpleNamespace(aws_request_id="lambda-req-1", function_name="metro-dev-push", memory_limit_in_mb=512)


@pytest.mark.parametrize("text", SECRETS)
def test_redact_removes_every_credential_form(text: str) -> None:
    assert TOKEN not in logs.redact(text) and logs.REDACTED in logs.redact(text)
    escaped = json.dumps({"message": text})  # as it stands inside a JSON line
    assert TOKEN not in logs.redact(escaped)


@pytest.mark.parametrize("text", ["published 3 messages to projects/p/topics/t", "raw object raw/p/t/123 stored",
                                  "subscription projects/p/subscriptions/s: 2 acked", "token refused (401)"])
def test_redact_keeps_ordinary_lines(text: str) -> None:
    assert logs.redact(text) == text


def _json_lines(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


@pytest.mark.usefixtures("restored_logging")
def test_json_lines_carry_the_invocation_ids_and_never_a_token() -> None:
    buf = io.StringIO()
    logs.configure("json", "DEBUG", buf)

    @handlers.observed(handlers.push_ids)
    def push(event: dict[str, Any], context: Any) -> str:
        logging.getLogger("chalicelib.delivery.push").debug("headers %s", {"Authorization": f"Bearer {TOKEN}"})
        try:
            raise RuntimeError(f"POST failed: key={TOKEN}")
        except RuntimeError:
            logging.getLogger("metro.push").exception("push failed")
        return "done"

    event = {"Records": [{"messageId": "m-1", "eventSourceARN": "arn:aws:sqs:us-east-1:1:metro-dev-q1"},
                         {"messageId": "m-2", "eventSourceARN": "arn:aws:sqs:us-east-1:1:metro-dev-q1"}]}
    assert push(event, CTX) == "done"
    logging.getLogger("chalicelib.after").warning("outside any invocation")
    assert TOKEN not in buf.getvalue()
    first, second, after = _json_lines(buf)
    for line in (first, second):
        assert line["service"] == "metro" and line["function_request_id"] == "lambda-req-1"
        assert line["correlation_id"] == "m-1,m-2" and line["queue"] == "metro-dev-q1"
        assert line["function_name"] == "metro-dev-push" and isinstance(line["cold_start"], bool)
    assert first["level"] == "DEBUG" and second["level"] == "ERROR" and "exception" in second
    assert "correlation_id" not in after and "function_request_id" not in after  # the keys end with the call


@pytest.mark.usefixtures("restored_logging")
def test_text_lines_are_readable_and_redacted() -> None:
    buf = io.StringIO()
    logs.configure("text", "INFO", buf)
    logging.getLogger("chalicelib.api").info("x-api-key: %s", TOKEN)
    logging.getLogger("chalicelib.api").debug("below the level")
    assert buf.getvalue() == f"INFO chalicelib.api x-api-key: {logs.REDACTED}\n"


def test_correlation_ids_of_each_event() -> None:
    fanout = {"Records": [{"dynamodb": {"NewImage": {"rid": {"S": f"r{i}"}}}} for i in range(12)]}
    assert handlers.fanout_ids(fanout)["correlation_id"] == "r0,r1,r2,r3,r4,r5,r6,r7,r8,r9,+2"
    assert handlers.seek_ids({"seekId": "s-1", "subscription": "projects/p/subscriptions/s"}) == {
        "correlation_id": "s-1", "subscription": "projects/p/subscriptions/s"}
    assert handlers.schedule_ids({"id": "evt-1", "time": "2026-11-26T10:00:00Z"}) == {"correlation_id": "evt-1"}
    assert handlers.push_ids({"Records": "not a list"}) == {"correlation_id": "", "queue": ""}


@pytest.mark.usefixtures("metrics_on")
def test_an_operation_counts_requests_latency_messages_and_server_errors_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    with metrics.operation(catalog.PUBLISH, topic="projects/p/topics/t") as tally:
        tally.messages = 3
    for error in (NotFound("gone"), Unavailable("busy"), RuntimeError("bug")):
        with pytest.raises(type(error)), metrics.operation(catalog.PULL, subscription="projects/p/subscriptions/s"):
            raise error
    metrics.flush()
    lines = emf_lines(capsys.readouterr().out)
    metro = {"service": "metro"}
    assert all(line.namespace == "Metro" for line in lines)
    assert total(lines, "PublishRequests", **metro) == 1 and total(lines, "PublishMessages", **metro) == 3
    assert total(lines, "PullRequests", **metro) == 3
    assert total(lines, "PullErrors", **metro) == 2  # UNAVAILABLE and the bug; NOT_FOUND is the caller's
    [latency] = [line for line in lines if "PublishLatency" in line.values]
    assert latency.units["PublishLatency"] == "Milliseconds" and latency.values["PublishLatency"][0] >= 0
    # per-resource dimensions (on here): the message count per topic, on a line of its own
    assert total(lines, "PublishMessages", service="metro", Topic="projects/p/topics/t") == 3
    assert not [line for line in lines if "Topic" in line.dimensions and "PublishLatency" in line.values]


@pytest.mark.usefixtures("metrics_on")
def test_the_wrapper_flushes_every_invocation_and_beats_only_when_it_ended_well(
        capsys: pytest.CaptureFixture[str]) -> None:
    @handlers.observed(handlers.schedule_ids, heartbeat=catalog.MAINTENANCE_HEARTBEAT)
    def maintenance(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add(catalog.SEEK_RUNNING, 0)
        if event.get("fail"):
            raise RuntimeError("sweep failed")
        return {}

    maintenance({"id": "e1"}, CTX)
    first = emf_lines(capsys.readouterr().out)
    assert total(first, catalog.MAINTENANCE_HEARTBEAT, service="metro") == 1
    with pytest.raises(RuntimeError):
        maintenance({"id": "e2", "fail": True}, CTX)
    second = emf_lines(capsys.readouterr().out)
    assert len(second) == 1 and catalog.SEEK_RUNNING in second[0].values  # flushed although it failed
    assert catalog.MAINTENANCE_HEARTBEAT not in second[0].values


@pytest.mark.usefixtures("metrics_on")
def test_metrics_never_raise(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                             caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise ValueError("EMF refused")

    monkeypatch.setattr(metrics._METRICS, "add_metric", broken)
    with metrics.operation(catalog.ACKNOWLEDGE):
        pass
    monkeypatch.undo()
    monkeypatch.setenv("METRO_METRICS", "1")
    metrics.add(catalog.PUSH_ACKED, 1)
    monkeypatch.setattr(metrics._METRICS, "flush_metrics", broken)
    with caplog.at_level(logging.WARNING, logger="chalicelib.observability.metrics"):
        metrics.flush()
    assert "metrics not written" in caplog.text and "not recorded" in caplog.text
    assert not metrics._METRICS.metric_set  # dropped, not kept growing


def test_metrics_off_record_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("METRO_METRICS", "0")
    metrics.reset()
    try:
        metrics.add(catalog.PUSH_ACKED, 1)
        metrics.flush()
        assert capsys.readouterr().out == "" and not metrics._METRICS.metric_set
    finally:
        monkeypatch.undo()
        metrics.reset()
