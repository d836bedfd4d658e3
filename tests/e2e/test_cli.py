"""`metro`, the command line, driven as a reader runs it (`python -m chalicelib.cli ...`, a subprocess) against
the real stack: topics and subscriptions, publish with attributes and an ordering key, pull --ack, republish to
a second topic, the exit code of an error; and in keys mode a user created with --token-only whose token then
works."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.polling import pull_until
from tests.stack import ROOT, RunningStack, keys_mode_stack

pytestmark = pytest.mark.e2e

ADMIN_KEY = secrets.token_urlsafe(32)


def metro(stack: RunningStack, tmp: Path, *args: str, token: str | None = None, project: str = "cli-e2e",
          code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    env.update({"METRO_URL": stack.url, "METRO_PROJECT": project, "METRO_CONFIG": str(tmp / "config.json")})
    if token:
        env["METRO_TOKEN"] = token
    done = subprocess.run([sys.executable, "-m", "chalicelib.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == code, f"metro {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def pulled(stack: RunningStack, tmp: Path, subscription: str, count: int, **kw: Any) -> list[dict[str, Any]]:
    def once() -> list[dict[str, Any]]:
        out = metro(stack, tmp, "pull", subscription, "--ack", "--wait", "--max", "10", "-o", "json", **kw).stdout
        return list(json.loads(out))
    return pull_until(once, count, timeout=30)


def test_topics_publish_pull_republish_and_errors(stack: RunningStack, tmp_path: Path, unique: str) -> None:
    source, copy = f"{unique}-orders", f"{unique}-copies"
    for topic in (source, copy):
        metro(stack, tmp_path, "topics", "create", topic, "--label", "team=cli")
    metro(stack, tmp_path, "subscriptions", "create", f"{source}-sub", "--topic", source, "--enable-message-ordering")
    metro(stack, tmp_path, "subscriptions", "create", f"{copy}-sub", "--topic", f"projects/cli-e2e/topics/{copy}",
          "--enable-message-ordering")
    listed = json.loads(metro(stack, tmp_path, "topics", "list", "-o", "json").stdout)
    assert {f"projects/cli-e2e/topics/{t}" for t in (source, copy)} <= {t["name"] for t in listed}
    described = json.loads(metro(stack, tmp_path, "topics", "describe", source, "-o", "json").stdout)
    assert described["labels"] == {"team": "cli"}

    message_id = metro(stack, tmp_path, "publish", source, "--data", "first", "--attr", "origin=cli",
                       "--attr", "n=1", "--ordering-key", "k1").stdout.strip()
    assert message_id
    [got] = pulled(stack, tmp_path, f"{source}-sub", 1)
    assert (got["messageId"], got["data"], got["attributes"], got["orderingKey"]) == (
        message_id, "first", {"origin": "cli", "n": "1"}, "k1")
    assert got["publishTime"]

    metro(stack, tmp_path, "publish", source, "--data", "second", "--attr", "origin=republished", "--ordering-key",
          "k2")
    done = metro(stack, tmp_path, "republish", f"{source}-sub", "--to", copy, "--until-empty")
    assert "Republished 1 messages" in done.stderr
    [again] = pulled(stack, tmp_path, f"{copy}-sub", 1)
    assert (again["data"], again["attributes"], again["orderingKey"]) == ("second", {"origin": "republished"}, "k2")
    assert pulled(stack, tmp_path, f"{source}-sub", 1) == []  # acknowledged by the republisher

    missing = metro(stack, tmp_path, "topics", "describe", f"{unique}-missing", code=1)
    assert missing.stderr.startswith("ERROR: (metro.topics.describe) NOT_FOUND: ")
    again_created = metro(stack, tmp_path, "topics", "create", source, code=1)
    assert again_created.stderr.startswith("ERROR: (metro.topics.create) ALREADY_EXISTS: ")
    metro(stack, tmp_path, "seek", f"{source}-sub", code=2)  # neither --time nor --snapshot: a usage error


@pytest.fixture(scope="module")
def keys_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with keys_mode_stack(tmp_path_factory.mktemp("cli-keys"), ADMIN_KEY) as running:
        yield running


def test_keys_mode_a_user_s_token_from_token_only_works(keys_stack: RunningStack, tmp_path: Path) -> None:
    admin = {"token": ADMIN_KEY, "project": "clikeys"}
    metro(keys_stack, tmp_path, "projects", "create", "clikeys", "--description", "cli e2e", **admin)
    token = metro(keys_stack, tmp_path, "users", "create", "alice", "--role", "project_admin", "--email",
                  "alice@example.com", "--token-only", **admin).stdout.strip()
    assert token and "\n" not in token
    metro(keys_stack, tmp_path, "topics", "create", "orders", token=token, project="clikeys")
    metro(keys_stack, tmp_path, "acl", "set", "topic", "orders", "--user", "alice", token=token, project="clikeys")
    acl = json.loads(metro(keys_stack, tmp_path, "acl", "get", "topic", "orders", "-o", "json", token=token,
                           project="clikeys").stdout)
    assert acl == {"authorized_users": ["alice"]}
    users = json.loads(metro(keys_stack, tmp_path, "users", "list", "-o", "json", **admin).stdout)
    assert "alice" in {u["name"] for u in users}

    denied = metro(keys_stack, tmp_path, "topics", "list", project="clikeys", code=1)  # no token
    assert "UNAUTHENTICATED" in denied.stderr
    forbidden = metro(keys_stack, tmp_path, "users", "list", token=token, code=1)  # not the service admin
    assert "PERMISSION_DENIED" in forbidden.stderr
    assert "ALREADY_EXISTS" in metro(keys_stack, tmp_path, "users", "create", "alice", code=1, **admin).stderr


def test_keys_mode_init_applies_a_declaration_once(keys_stack: RunningStack, tmp_path: Path) -> None:
    declaration = tmp_path / "declared.yaml"
    declaration.write_text("projects:\n  - name: cliinit\nusers:\n  - name: bob\n    projects:\n"
                           "      - {project: cliinit, roles: [publisher]}\n"
                           "topics:\n  - name: projects/cliinit/topics/events\n"
                           "subscriptions:\n  - {name: projects/cliinit/subscriptions/audit, "
                           "topic: projects/cliinit/topics/events}\n"
                           "acls:\n  - {name: projects/cliinit/topics/events, authorized_users: [bob]}\n")
    first = metro(keys_stack, tmp_path, "init", str(declaration), token=ADMIN_KEY).stdout
    assert "created topic projects/cliinit/topics/events" in first
    token = first.split("user bob's token (shown once, keep it): ", 1)[1].split()[0]
    assert metro(keys_stack, tmp_path, "publish", "events", "--data", "hi", token=token, project="cliinit").stdout
    again = json.loads(metro(keys_stack, tmp_path, "init", str(declaration), "-o", "json", token=ADMIN_KEY).stdout)
    assert again["tokens"] == [] and not any("created" in line for line in again["applied"])
    declaration.write_text("topics:\n  - name: projects/cliinit/topics/Bad!\n")
    refused = metro(keys_stack, tmp_path, "init", str(declaration), token=ADMIN_KEY, code=1)
    assert "INVALID_ARGUMENT" in refused.stderr and "topics[0]" in refused.stderr
    assert "PERMISSION_DENIED" in metro(keys_stack, tmp_path, "init", str(declaration), token=token, code=1).stderr


def test_reset_wipes_a_data_directory_no_stack_uses(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "journal-0.log").write_bytes(b"METRO-JOURNAL 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    done = subprocess.run([sys.executable, "-m", "chalicelib.cli", "reset", "--yes"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False, env={**env, "METRO_DATA_DIR": str(data)})
    assert done.returncode == 0 and "Wiped" in done.stderr + done.stdout and not data.exists()
