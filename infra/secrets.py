"""The stage's secrets in SSM Parameter Store: created on the first deploy, never overwritten, never printed.

SecureString parameters under ``/metro-{stage}/``: ``ack-secret`` (HMAC key of ack ids, page tokens and
token hashes), ``admin-key`` (the service admin's token) and ``push-signing-key`` (the RSA key that signs
push tokens). The functions read them at start (chalicelib/store/secrets.py, METRO_SECRETS_SSM_PATH).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from chalicelib.core.access.oidc import generate_signing_key
from infra.names import StageNames

NAMES = ("ack-secret", "admin-key", "push-signing-key")


def path(stage: str) -> str:
    return f"/{StageNames(stage).prefix}"


def _generators() -> dict[str, Callable[[], str]]:
    return {"ack-secret": lambda: secrets.token_urlsafe(48), "admin-key": lambda: secrets.token_urlsafe(32),
            "push-signing-key": generate_signing_key}


def ensure(ssm: Any, stage: str) -> list[str]:
    """Create the stage's missing secrets; returns the names created (existing ones are left as they are)."""
    base = path(stage)
    present = {p["Name"] for p in ssm.get_parameters(Names=[f"{base}/{n}" for n in NAMES])["Parameters"]}
    created = []
    for name, make in _generators().items():
        full = f"{base}/{name}"
        if full not in present:
            ssm.put_parameter(Name=full, Value=make(), Type="SecureString", Overwrite=False,
                              Description=f"Metro stage {stage}: {name}")
            created.append(name)
    return created


def admin_key_hint(stage: str, region: str) -> str:
    """How to read the admin token (it is never printed by the deploy)."""
    return (f"aws ssm get-parameter --region {region} --with-decryption --name {path(stage)}/admin-key "
            "--query Parameter.Value --output text")
