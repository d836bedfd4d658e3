"""Deployed secrets from SSM Parameter Store replace the environment's, and are required where configured."""

from __future__ import annotations

import dataclasses

import pytest

from chalicelib.core.errors import Unavailable
from chalicelib.runtime import Services, check_secrets, with_stored_secrets
from chalicelib.store import aws

PATH = "/metro/test-stage"


def test_secrets_come_from_ssm_when_a_path_is_set(services: Services) -> None:
    ssm = aws.client("ssm", services.ctx.config)
    for name, value in (("ack-secret", "a" * 40), ("admin-key", "k" * 43), ("push-signing-key", "PEM")):
        ssm.put_parameter(Name=f"{PATH}/{name}", Value=value, Type="SecureString", Overwrite=True)
    cfg = dataclasses.replace(services.ctx.config, secrets_path=PATH, deployed=True, auth_mode="keys")
    loaded = with_stored_secrets(cfg)
    assert (loaded.ack_secret, loaded.admin_key, loaded.push_signing_key) == (b"a" * 40, "k" * 43, "PEM")
    check_secrets(loaded)  # a deployed keys-mode stage with real secrets starts
    with pytest.raises(RuntimeError, match="METRO_ADMIN_KEY"):
        check_secrets(cfg)  # the same stage on the environment's local defaults refuses to start


def test_a_path_without_secrets_refuses_to_start(services: Services) -> None:
    cfg = dataclasses.replace(services.ctx.config, secrets_path="/metro/nothing-here")
    with pytest.raises(Unavailable, match="No secrets"):
        with_stored_secrets(cfg)


def test_without_a_path_the_environment_is_used(services: Services) -> None:
    assert with_stored_secrets(services.ctx.config) is services.ctx.config
