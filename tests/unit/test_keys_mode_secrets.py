"""Keys mode refuses the built-in (or an empty) METRO_ACK_SECRET, which keys the stored token hashes, page
tokens and ack ids; the launchers of keys-mode stacks give each run a secret of its own."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from chalicelib.config import LOCAL_ACK_SECRET, Config
from chalicelib.runtime import check_secrets
from tests.stack import stack_env

ADMIN_KEY = secrets.token_urlsafe(32)


@pytest.mark.parametrize("ack_secret", [LOCAL_ACK_SECRET.encode(), b""], ids=["built-in", "empty"])
@pytest.mark.parametrize("deployed", [False, True], ids=["local", "deployed"])
def test_keys_mode_refuses_a_public_ack_secret(ack_secret: bytes, deployed: bool) -> None:
    with pytest.raises(RuntimeError, match="METRO_ACK_SECRET"):
        check_secrets(Config(auth_mode="keys", admin_key=ADMIN_KEY, deployed=deployed, ack_secret=ack_secret))


def test_keys_mode_starts_with_a_secret_of_its_own_and_open_mode_with_the_built_in_one() -> None:
    check_secrets(Config(auth_mode="keys", admin_key=ADMIN_KEY, deployed=False, ack_secret=secrets.token_bytes(32)))
    check_secrets(Config(auth_mode="open", deployed=False, ack_secret=LOCAL_ACK_SECRET.encode()))


def test_a_keys_mode_stack_gets_a_fresh_ack_secret_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METRO_ACK_SECRET", raising=False)
    monkeypatch.delenv("METRO_AUTH", raising=False)
    keys = {"METRO_AUTH": "keys", "METRO_ADMIN_KEY": ADMIN_KEY}
    first, second = stack_env(1, 2, keys)["METRO_ACK_SECRET"], stack_env(1, 2, keys)["METRO_ACK_SECRET"]
    assert len(first) >= 32 and first != second and LOCAL_ACK_SECRET not in (first, second)
    assert stack_env(1, 2, {**keys, "METRO_ACK_SECRET": LOCAL_ACK_SECRET})["METRO_ACK_SECRET"] != LOCAL_ACK_SECRET
    given = secrets.token_urlsafe(32)
    assert stack_env(1, 2, {**keys, "METRO_ACK_SECRET": given})["METRO_ACK_SECRET"] == given
    assert "METRO_ACK_SECRET" not in stack_env(1, 2)  # open mode: nothing to protect


def test_a_deployed_metro_refuses_open_mode() -> None:
    """Before, it only logged a warning and served every caller as service_admin of every project."""
    with pytest.raises(RuntimeError, match="METRO_AUTH=open is for the local stack only"):
        check_secrets(Config(auth_mode="open", deployed=True, ack_secret=secrets.token_bytes(32)))


def test_the_deploy_refuses_a_stage_configured_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from infra import deploy

    config = tmp_path / "config.json"
    config.write_text('{"stages": {"demo": {"environment_variables": {"METRO_AUTH": "open"}}}}')
    read = deploy.stage_auth
    monkeypatch.setattr(deploy, "stage_auth", lambda stage: read(stage, config))
    monkeypatch.setattr(deploy, "target", lambda *args: pytest.fail("an open stage must not get this far"))
    with pytest.raises(typer.Exit):
        deploy.deploy(stage="demo", region="eu-west-1", parallelization_factor=4, maximum_retry_attempts=100,
                      alarm_topic_arn="")
