"""gcloud against Metro in keys mode: `gcloud pubsub topics create/publish` and `subscriptions create/pull
--auto-ack` with the pubsub endpoint overridden to the local stack and an access token file holding a Metro
token (a throwaway CLOUDSDK_CONFIG, so nothing of the user's gcloud setup is read or changed)."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.stack import RunningStack, keys_mode_stack

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud (Google Cloud SDK) is not installed")]

ADMIN_KEY = secrets.token_urlsafe(32)
PROJECT = "gcloud-project"


@pytest.fixture(scope="module")
def keys_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with keys_mode_stack(tmp_path_factory.mktemp("gcloud"), ADMIN_KEY) as running:
        yield running


def _admin(stack: RunningStack, method: str, path: str, body: Any) -> Any:
    resp = requests.request(method, stack.url + path, json=body, headers={"x-api-key": ADMIN_KEY}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def token(keys_stack: RunningStack) -> str:
    """A project admin's token (created with curl-like calls as the service admin)."""
    _admin(keys_stack, "POST", f"/v1/projects/{PROJECT}", {"description": "gcloud e2e"})
    user = _admin(keys_stack, "POST", "/v1/users/gcloud-user", {"projects": [{"project": PROJECT,
                                                                              "roles": ["project_admin"]}]})
    return str(user["token"])


def gcloud(stack: RunningStack, home: Path, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One gcloud command against the stack, with ``token`` as its access token."""
    token_file = home / "token"
    token_file.write_text(token)
    env = {**os.environ, "CLOUDSDK_CONFIG": str(home / "config"),
           "CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB": f"{stack.url}/",
           "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": str(token_file), "CLOUDSDK_CORE_PROJECT": PROJECT,
           "CLOUDSDK_CORE_DISABLE_PROMPTS": "1", "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "1",
           "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "1"}
    env.pop("PUBSUB_EMULATOR_HOST", None)
    return subprocess.run(["gcloud", *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_gcloud_topics_and_subscriptions(keys_stack: RunningStack, token: str, tmp_path: Path) -> None:
    def run(*args: str) -> str:
        done = gcloud(keys_stack, tmp_path, token, *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("pubsub", "topics", "create", "gc-topic")
    run("pubsub", "subscriptions", "create", "gc-sub", "--topic", "gc-topic", "--ack-deadline", "30")
    described = json.loads(run("pubsub", "subscriptions", "describe", "gc-sub", "--format", "json"))
    assert described["topic"] == f"projects/{PROJECT}/topics/gc-topic" and described["ackDeadlineSeconds"] == 30
    missing = gcloud(keys_stack, tmp_path, token, "pubsub", "topics", "describe", "gc-none")
    assert missing.returncode != 0 and "NOT_FOUND" in missing.stderr.upper().replace(" ", "_"), missing.stderr
    published = json.loads(run("pubsub", "topics", "publish", "gc-topic", "--message", "hello from gcloud",
                               "--attribute", "origin=gcloud", "--format", "json"))
    assert len(published["messageIds"]) == 1
    pulled = json.loads(run("pubsub", "subscriptions", "pull", "gc-sub", "--auto-ack", "--limit", "10",
                            "--format", "json"))
    assert [m["message"]["messageId"] for m in pulled] == published["messageIds"]
    message = pulled[0]["message"]
    assert message["attributes"] == {"origin": "gcloud"}
    assert base64.b64decode(message["data"]) == b"hello from gcloud"
    again = json.loads(run("pubsub", "subscriptions", "pull", "gc-sub", "--auto-ack", "--format", "json"))
    assert again == []  # --auto-ack acknowledged it


def test_gcloud_with_an_unknown_token_is_refused(keys_stack: RunningStack, tmp_path: Path) -> None:
    done = gcloud(keys_stack, tmp_path, "not-a-metro-token", "pubsub", "topics", "create", "gc-denied")
    assert done.returncode != 0
    assert "missing a valid API key or token" in done.stderr, done.stderr  # Metro's 401 UNAUTHENTICATED
