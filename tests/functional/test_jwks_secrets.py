"""``GET /v1/jwks`` serves the key the push tokens are signed with, also when that key is a deployed stage's secret
in SSM Parameter Store (the rehearsal found the deployed JWKS empty: it read the environment only)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.core.access.oidc import TokenSigner, generate_signing_key
from chalicelib.runtime import Services
from chalicelib.store import aws

PATH = "/metro-jwks-test"


@pytest.fixture
def stored_key(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    pem = generate_signing_key()
    ssm = aws.client("ssm", services.ctx.config)
    for name, value in (("ack-secret", "a" * 40), ("admin-key", "k" * 43), ("push-signing-key", pem)):
        ssm.put_parameter(Name=f"{PATH}/{name}", Value=value, Type="SecureString", Overwrite=True)
    monkeypatch.setenv("METRO_SECRETS_SSM_PATH", PATH)
    monkeypatch.delenv("METRO_PUSH_SIGNING_KEY", raising=False)
    runtime.reset()
    yield pem
    runtime.reset()


def test_the_jwks_holds_the_signing_key_from_ssm(stored_key: str) -> None:
    expected = TokenSigner(stored_key, "https://issuer.example").jwks()
    with Client(app, stage_name="local") as client:
        for path in ("/v1/jwks", "/.well-known/jwks.json"):
            resp = client.http.get(path)
            assert resp.status_code == 200
            assert json.loads(resp.body) == expected, path
