"""The deploy creates the stage's secrets once and never overwrites or prints them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from infra import policies, secrets


@pytest.fixture
def ssm() -> Iterator[object]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield boto3.client("ssm", region_name="us-east-1")


def test_secrets_are_created_once_and_kept(ssm: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert secrets.ensure(ssm, "qa") == ["ack-secret", "admin-key", "push-signing-key"]
    first = {p["Name"]: p["Value"] for p in ssm.get_parameters(  # type: ignore[attr-defined]
        Names=[f"/metro-qa/{n}" for n in secrets.NAMES], WithDecryption=True)["Parameters"]}
    assert len(first) == 3 and all(p for p in first.values())
    assert len(first["/metro-qa/admin-key"]) >= 32 and "PRIVATE KEY" in first["/metro-qa/push-signing-key"]
    assert secrets.ensure(ssm, "qa") == []  # a re-run changes nothing
    again = {p["Name"]: p["Value"] for p in ssm.get_parameters(  # type: ignore[attr-defined]
        Names=[f"/metro-qa/{n}" for n in secrets.NAMES], WithDecryption=True)["Parameters"]}
    assert again == first
    printed = capsys.readouterr().out
    assert not any(value in printed for value in first.values())


def test_every_function_may_read_only_its_stage_s_secrets() -> None:
    for function in ("api_handler", "fanout", "push", "maintenance"):
        [grant] = [s for s in policies.policy("qa", function)["Statement"] if s.get("Sid") == "StageSecrets"]
        assert grant["Action"] == ["ssm:GetParameters"]
        assert "parameter/metro-qa/*" in str(grant["Resource"])


def test_a_stage_is_open_only_when_its_configuration_says_so(tmp_path: Path) -> None:
    from infra.deploy import stage_auth

    config = tmp_path / "config.json"
    config.write_text('{"environment_variables": {"METRO_MODE": "aws"}, "stages": {"dev": {}, "demo": '
                      '{"environment_variables": {"METRO_AUTH": "open"}}}}')
    assert stage_auth("dev", config) == "keys" and stage_auth("demo", config) == "open"
    assert stage_auth("dev") == stage_auth("prod") == "keys"  # the repository's own stages are never open
