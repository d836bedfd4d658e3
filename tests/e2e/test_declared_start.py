"""The real local stack started with METRO_INIT and PUBSUB_PROJECT1 (docs/init.md): google-cloud-pubsub publishes
and pulls on the declared resources, with a declared user's token; a bad file stops the stack before it serves."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from google.api_core.exceptions import Forbidden
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials

from tests.e2e.google_helpers import pull_n
from tests.stack import ROOT, free_port, stack_env, start_stack

pytestmark = pytest.mark.e2e

OPS_TOKEN = "declared-ops-token-" + secrets.token_urlsafe(16)
DECLARED = {
    "projects": [{"name": "init-demo", "description": "declared at start"}],
    "users": [{"name": "ops", "token": OPS_TOKEN, "projects": [{"project": "init-demo", "roles": ["publisher",
                                                                                                  "consumer"]}]},
              {"name": "viewer", "projects": [{"project": "init-demo", "roles": ["consumer"]}]}],
    "topics": [{"name": "projects/init-demo/topics/orders", "labels": {"team": "billing"}}],
    "subscriptions": [{"name": "projects/init-demo/subscriptions/billing",
                       "topic": "projects/init-demo/topics/orders", "ackDeadlineSeconds": 20}],
    "acls": [{"name": "projects/init-demo/topics/orders", "authorized_users": ["ops"]},
             {"name": "projects/init-demo/subscriptions/billing", "authorized_users": ["ops"]}],
}


def _clients(url: str, token: str) -> tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]:
    rest = {"transport": "rest", "credentials": Credentials(token), "client_options": {"api_endpoint": url}}
    return pubsub_v1.PublisherClient(**rest), pubsub_v1.SubscriberClient(**rest)


@pytest.mark.timeout(180)
def test_the_stack_starts_with_the_declared_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    init = tmp_path / "metro-init.yaml"
    init.write_text(yaml.safe_dump(DECLARED))
    admin_key = secrets.token_urlsafe(32)
    stack = start_stack(tmp_path / "metro.log", extra_env={
        "METRO_AUTH": "keys", "METRO_ADMIN_KEY": admin_key, "METRO_INIT": str(init),
        "PUBSUB_PROJECT1": "wrapped,events:events-sub:events-audit,plain"})
    try:
        log = (tmp_path / "metro.log").read_text()
        assert "created topic projects/init-demo/topics/orders" in log
        assert "created subscription projects/wrapped/subscriptions/events-audit" in log
        assert OPS_TOKEN not in log  # given tokens are never shown; a generated one, once
        assert log.count("Metro declared user viewer's token (shown once, keep it): ") == 1
        # the declared user publishes and pulls with its declared token, on the declared resources
        pub, sub = _clients(stack.url, OPS_TOKEN)
        pub.publish("projects/init-demo/topics/orders", b"declared").result(timeout=30)
        got = pull_n(sub, "projects/init-demo/subscriptions/billing", 1)
        assert got[0].message.data == b"declared"
        assert sub.get_subscription(subscription="projects/init-demo/subscriptions/billing").ack_deadline_seconds == 20
        viewer_token = log.split("Metro declared user viewer's token (shown once, keep it): ")[1].split()[0]
        with pytest.raises(Forbidden):  # consumer, but not on the subscription's ACL
            _clients(stack.url, viewer_token)[1].pull(subscription="projects/init-demo/subscriptions/billing",
                                                      max_messages=1, return_immediately=True)
        # PUBSUB_PROJECT1's topics and pull subscriptions, with the service admin's token
        pub, sub = _clients(stack.url, admin_key)
        pub.publish("projects/wrapped/topics/events", b"wrapped").result(timeout=30)
        for name in ("events-sub", "events-audit"):
            assert pull_n(sub, f"projects/wrapped/subscriptions/{name}", 1)[0].message.data == b"wrapped"
        assert pub.get_topic(topic="projects/wrapped/topics/plain").name == "projects/wrapped/topics/plain"
    finally:
        stack.stop()


def test_a_bad_entry_stops_the_stack_naming_the_file_and_the_entry(tmp_path: Path) -> None:
    init = tmp_path / "metro-init.json"
    bad = {**DECLARED, "subscriptions": [*DECLARED["subscriptions"],
                                         {"name": "projects/init-demo/subscriptions/late",
                                          "topic": "projects/init-demo/topics/orders", "ackDeadlineSeconds": 1}]}
    init.write_text(json.dumps(bad))
    env = stack_env(free_port(), free_port(), {"METRO_INIT": str(init)})
    done = subprocess.run([sys.executable, "-m", "chalicelib.local"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=90, check=False)
    assert done.returncode == 1
    assert (f"Metro cannot start: declared resources refused: {init}: subscriptions[1]: Invalid value at "
            "'ackDeadlineSeconds'") in done.stderr, done.stderr
    assert "Metro declared" not in done.stdout and "Metro listening" not in done.stdout
