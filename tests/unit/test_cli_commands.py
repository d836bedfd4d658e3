"""`metro`'s commands against a fake HTTP transport: the requests each command sends, what it prints, and the
exit codes (0; 1 for Metro's errors, as gcloud; 2 for usage errors, as typer)."""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from chalicelib.cli.client import HttpRequest, HttpResponse
from chalicelib.cli.context import Runtime
from chalicelib.cli.main import app, run

Answer = Callable[[HttpRequest], tuple[int, Any]]


class FakeMetro:
    """Answers by (method, path) with a fixed body or a function of the request; records every request."""

    def __init__(self) -> None:
        self.requests: list[HttpRequest] = []
        self.answers: dict[tuple[str, str], Answer] = {}

    def on(self, method: str, path: str, status: int = 200, body: Any = None,
           answer: Answer | None = None) -> None:
        self.answers[(method, path)] = answer or (lambda _r: (status, {} if body is None else body))

    def __call__(self, request: HttpRequest, timeout: float) -> HttpResponse:
        self.requests.append(request)
        path = request.url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
        answer = self.answers.get((request.method, "/" + path))
        if answer is None:
            return HttpResponse(404, json.dumps({"error": {"code": 404, "message": f"no route /{path}",
                                                           "status": "NOT_FOUND"}}).encode())
        status, body = answer(request)
        return HttpResponse(status, body if isinstance(body, bytes) else json.dumps(body).encode())

    def bodies(self, method: str, path_end: str) -> list[Any]:
        return [json.loads(r.body or b"null") for r in self.requests
                if r.method == method and r.url.split("?")[0].endswith(path_end)]


@pytest.fixture
def fake() -> FakeMetro:
    return FakeMetro()


def metro(fake: FakeMetro, *args: str, env: dict[str, str] | None = None, tmp: Path | None = None) -> Result:
    environ = {"METRO_CONFIG": str((tmp or Path(tempfile.mkdtemp())) / "config.json"), "METRO_PROJECT": "demo",
               **(env or {})}
    return CliRunner().invoke(app, list(args), obj=Runtime(environ=environ, transport=fake, sleep=lambda _s: None))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_create_topic_sends_the_options_over_the_body(fake: FakeMetro) -> None:
    fake.on("PUT", "/v1/projects/demo/topics/orders", body={"name": "projects/demo/topics/orders"})
    done = metro(fake, "topics", "create", "orders", "--label", "team=a", "--message-retention-duration", "600s",
                 "--body", '{"labels": {"old": "x", "team": "b"}, "kmsKeyName": "k"}', "-o", "json")
    assert done.exit_code == 0, done.output
    assert fake.bodies("PUT", "/topics/orders") == [
        {"labels": {"old": "x", "team": "a"}, "kmsKeyName": "k", "messageRetentionDuration": "600s"}]
    assert json.loads(done.stdout) == {"name": "projects/demo/topics/orders"}


def test_create_subscription_resolves_its_topic_and_dead_letter_topic(fake: FakeMetro) -> None:
    fake.on("PUT", "/v1/projects/demo/subscriptions/billing", body={"name": "projects/demo/subscriptions/billing"})
    done = metro(fake, "subscriptions", "create", "billing", "--topic", "orders", "--ack-deadline", "30",
                 "--enable-message-ordering", "--dead-letter-topic", "projects/x/topics/dlq",
                 "--max-delivery-attempts", "5")
    assert done.exit_code == 0, done.output
    assert fake.bodies("PUT", "/subscriptions/billing") == [{
        "topic": "projects/demo/topics/orders", "ackDeadlineSeconds": 30, "enableMessageOrdering": True,
        "deadLetterPolicy": {"deadLetterTopic": "projects/x/topics/dlq", "maxDeliveryAttempts": 5}}]


def test_list_follows_page_tokens_and_prints_a_table(fake: FakeMetro) -> None:
    def page(request: HttpRequest) -> tuple[int, Any]:
        if "pageToken=next" in request.url:
            return 200, {"topics": [{"name": "projects/demo/topics/b"}]}
        return 200, {"topics": [{"name": "projects/demo/topics/a"}], "nextPageToken": "next"}
    fake.on("GET", "/v1/projects/demo/topics", answer=page)
    done = metro(fake, "topics", "list")
    assert done.exit_code == 0, done.output
    assert "projects/demo/topics/a" in done.stdout and "projects/demo/topics/b" in done.stdout
    done = metro(fake, "topics", "list", "--output", "json")
    assert [t["name"] for t in json.loads(done.stdout)] == ["projects/demo/topics/a", "projects/demo/topics/b"]


def test_schemas_create_posts_with_the_schema_id(fake: FakeMetro, tmp_path: Path) -> None:
    fake.on("POST", "/v1/projects/demo/schemas", body={"name": "projects/demo/schemas/s"})
    definition = tmp_path / "s.avsc"
    definition.write_text('{"type": "record"}')
    done = metro(fake, "schemas", "create", "s", "--type", "avro", "--definition-file", str(definition))
    assert done.exit_code == 0, done.output
    assert "schemaId=s" in fake.requests[0].url
    assert fake.bodies("POST", "/schemas") == [{"type": "AVRO", "definition": '{"type": "record"}'}]


def test_publish_with_attributes_and_an_ordering_key(fake: FakeMetro) -> None:
    fake.on("POST", "/v1/projects/demo/topics/orders:publish", body={"messageIds": ["42"]})
    done = metro(fake, "publish", "orders", "--data", "hello", "--attr", "a=1", "--attr", "b=x=y",
                 "--ordering-key", "k1")
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "42"
    assert fake.bodies("POST", ":publish") == [
        {"messages": [{"data": b64("hello"), "attributes": {"a": "1", "b": "x=y"}, "orderingKey": "k1"}]}]
    assert fake.requests[0].headers["Content-Type"] == "application/json"


def test_publish_a_file_s_bytes(fake: FakeMetro, tmp_path: Path) -> None:
    fake.on("POST", "/v1/projects/demo/topics/orders:publish", body={"messageIds": ["1"]})
    payload = tmp_path / "blob"
    payload.write_bytes(b"\x00\xff")
    assert metro(fake, "publish", "orders", "--file", str(payload)).exit_code == 0
    assert fake.bodies("POST", ":publish")[0]["messages"][0]["data"] == base64.b64encode(b"\x00\xff").decode()


def test_pull_prints_and_acks(fake: FakeMetro) -> None:
    received = [{"ackId": "a1", "message": {"messageId": "9", "publishTime": "2026-01-01T00:00:00Z",
                                            "data": b64("héllo"), "attributes": {"k": "v"}}},
                {"ackId": "a2", "message": {"messageId": "10", "data": base64.b64encode(b"\xff").decode()}}]
    fake.on("POST", "/v1/projects/demo/subscriptions/billing:pull", body={"receivedMessages": received})
    fake.on("POST", "/v1/projects/demo/subscriptions/billing:acknowledge")
    done = metro(fake, "pull", "billing", "--ack", "--max", "5", "--wait", "-o", "json")
    assert done.exit_code == 0, done.output
    assert fake.bodies("POST", ":pull") == [{"maxMessages": 5, "returnImmediately": False}]
    assert fake.bodies("POST", ":acknowledge") == [{"ackIds": ["a1", "a2"]}]
    printed = json.loads(done.stdout)
    assert [(m["messageId"], m["data"], m["encoding"]) for m in printed] == [
        ("9", "héllo", "utf-8"), ("10", base64.b64encode(b"\xff").decode(), "base64")]
    table = metro(fake, "pull", "billing")
    assert "héllo" in table.stdout and "k=v" in table.stdout and "base64:" in table.stdout
    assert fake.bodies("POST", ":pull")[-1] == {"maxMessages": 1, "returnImmediately": True}


def test_seek_to_a_snapshot_or_a_time(fake: FakeMetro) -> None:
    fake.on("POST", "/v1/projects/demo/subscriptions/billing:seek")
    assert metro(fake, "seek", "billing", "--snapshot", "snap").exit_code == 0
    assert metro(fake, "seek", "billing", "--time", "2026-01-01T00:00:00Z").exit_code == 0
    assert fake.bodies("POST", ":seek") == [{"snapshot": "projects/demo/snapshots/snap"},
                                            {"time": "2026-01-01T00:00:00Z"}]


@pytest.mark.parametrize("args", [
    ["seek", "billing"],
    ["seek", "billing", "--time", "t", "--snapshot", "s"],
    ["publish", "orders", "--attr", "novalue"],
    ["topics", "create", "orders", "--body", "[1]"],
    ["topics", "create", "orders", "--body", "{nope"],
    ["topics", "describe", "projects/demo/subscriptions/x"],
    ["pull", "billing", "--max", "0"],
    ["acl", "set", "topic", "orders"],
    ["topics", "frobnicate"],
])
def test_usage_errors_exit_2_and_send_nothing(fake: FakeMetro, args: list[str]) -> None:
    done = metro(fake, *args)
    assert done.exit_code == 2, done.output
    assert fake.requests == []


def test_a_short_id_without_a_project_is_a_usage_error(fake: FakeMetro) -> None:
    done = metro(fake, "topics", "describe", "orders", env={"METRO_PROJECT": ""})
    assert done.exit_code == 2
    assert "--project" in done.output


def test_metro_s_error_is_printed_and_exits_1(fake: FakeMetro) -> None:
    fake.on("PUT", "/v1/projects/demo/topics/orders", 409, {"error": {
        "code": 409, "message": "Resource already exists in the project (resource=orders).",
        "status": "ALREADY_EXISTS"}})
    done = metro(fake, "topics", "create", "orders")
    assert done.exit_code == 1
    line = "ERROR: (metro.topics.create) ALREADY_EXISTS: Resource already exists in the project (resource=orders)."
    assert line in done.stderr
    assert done.stdout == ""


def test_an_answer_without_an_envelope_still_names_its_status(fake: FakeMetro) -> None:
    fake.on("GET", "/v1/projects/demo/topics/orders", 503, b"upstream gone")
    done = metro(fake, "topics", "describe", "orders")
    assert done.exit_code == 1
    assert "UNAVAILABLE: upstream gone" in done.stderr


def test_an_unreachable_metro_exits_1(tmp_path: Path) -> None:
    environ = {"METRO_CONFIG": str(tmp_path / "c.json"), "METRO_URL": "http://127.0.0.1:9"}
    done = CliRunner().invoke(app, ["--project", "demo", "topics", "list"], obj=Runtime(environ=environ))
    assert done.exit_code == 1
    assert "UNAVAILABLE: cannot reach http://127.0.0.1:9" in done.stderr


def test_the_token_goes_as_a_bearer_token_and_the_url_from_the_environment(fake: FakeMetro) -> None:
    fake.on("GET", "/v1/projects/demo/topics", body={"topics": []})
    done = metro(fake, "topics", "list", env={"METRO_TOKEN": "t0k", "METRO_URL": "http://metro.example:1/"})
    assert done.exit_code == 0, done.output
    assert fake.requests[0].url == "http://metro.example:1/v1/projects/demo/topics"
    assert fake.requests[0].headers["Authorization"] == "Bearer t0k"
    assert metro(fake, "--token", "flag", "topics", "list", env={"METRO_TOKEN": "env"}).exit_code == 0
    assert fake.requests[-1].headers["Authorization"] == "Bearer flag"


def test_login_stores_a_0600_file_that_later_commands_read(fake: FakeMetro, tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["login", "--url", "http://metro.example:2", "--token-stdin", "--project", "p2"], input="s3cret\n",
        obj=Runtime(environ={"METRO_CONFIG": str(tmp_path / "config.json")}, transport=fake))
    assert done.exit_code == 0, done.output
    stored = tmp_path / "config.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert json.loads(stored.read_text()) == {"url": "http://metro.example:2", "token": "s3cret", "project": "p2"}
    assert "s3cret" not in done.output
    fake.on("GET", "/v1/projects/p2/topics", body={"topics": []})
    later = CliRunner().invoke(app, ["topics", "list"], obj=Runtime(environ={"METRO_CONFIG": str(stored)},
                                                                    transport=fake))
    assert later.exit_code == 0, later.output
    assert fake.requests[-1].url == "http://metro.example:2/v1/projects/p2/topics"
    assert fake.requests[-1].headers["Authorization"] == "Bearer s3cret"


def test_users_create_with_roles_per_project_and_token_only(fake: FakeMetro) -> None:
    fake.on("POST", "/v1/users/ops", body={"name": "ops", "token": "tok-123", "projects": []})
    done = metro(fake, "users", "create", "ops", "--role", "project_admin", "--role", "other=consumer",
                 "--role", "other=publisher", "--email", "ops@example.com", "--token-only")
    assert done.exit_code == 0, done.output
    assert done.stdout == "tok-123\n"
    assert fake.bodies("POST", "/users/ops") == [{
        "projects": [{"project": "demo", "roles": ["project_admin"]},
                     {"project": "other", "roles": ["consumer", "publisher"]}], "email": "ops@example.com"}]


def test_users_list_and_projects(fake: FakeMetro) -> None:
    fake.on("GET", "/v1/users", body={"users": [{"name": "ops", "projects": [{"project": "demo",
                                                                             "roles": ["consumer"]}]}]})
    fake.on("POST", "/v1/projects/demo", body={"name": "demo"})
    fake.on("DELETE", "/v1/projects/demo")
    listed = metro(fake, "users", "list")
    assert listed.exit_code == 0 and "demo: consumer" in listed.stdout
    assert metro(fake, "projects", "create", "demo", "--description", "d").exit_code == 0
    assert fake.bodies("POST", "/v1/projects/demo") == [{"description": "d"}]
    assert metro(fake, "projects", "delete", "demo").exit_code == 0


def test_acl_get_and_set(fake: FakeMetro) -> None:
    fake.on("GET", "/v1/projects/demo/topics/orders:acl", body={"authorized_users": ["pub", "ops"]})
    fake.on("POST", "/v1/projects/demo/topics/orders:modifyAcl")
    got = metro(fake, "acl", "get", "topic", "orders")
    assert got.exit_code == 0 and got.stdout.split() == ["pub", "ops"]
    done = metro(fake, "acl", "set", "topic", "orders", "--user", "pub", "--user", "ops", "-o", "json")
    assert done.exit_code == 0, done.output
    assert fake.bodies("POST", ":modifyAcl") == [{"authorized_users": ["pub", "ops"]}]
    assert metro(fake, "acl", "set", "subscription", "s", "--clear").exit_code == 1  # the fake has no such route


def test_the_command_tree() -> None:
    done = CliRunner().invoke(app, ["--help"])
    assert done.exit_code == 0
    for command in ("topics", "subscriptions", "snapshots", "schemas", "publish", "pull", "seek", "republish",
                    "users", "projects", "acl", "login"):
        assert command in done.stdout


def test_the_console_script_and_python_m_name_the_same_entry_point() -> None:
    import importlib
    import tomllib

    root = Path(__file__).resolve().parents[2]
    target = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["metro"]
    module, _, function = target.partition(":")
    assert getattr(importlib.import_module(module), function) is run
    assert "from chalicelib.cli.main import run" in (root / "chalicelib" / "cli" / "__main__.py").read_text()
