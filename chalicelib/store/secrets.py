"""The stage's secrets from SSM Parameter Store: one GetParameters call per cold start, decrypted.

Parameters (SecureString) under the configured path: ``ack-secret``, ``admin-key``, ``push-signing-key``.
Values are returned to the caller and never logged; a missing parameter is simply absent from the result.
"""

from __future__ import annotations

from chalicelib.config import Config
from chalicelib.core.errors import Unavailable
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors

NAMES = ("ack-secret", "admin-key", "push-signing-key")


def load_secrets(config: Config) -> dict[str, str]:
    """Secret name -> value for the parameters that exist under ``config.secrets_path``."""
    path = config.secrets_path.rstrip("/") + "/"
    ssm = aws.client("ssm", config)
    with aws_errors("SSM GetParameters"):
        resp = ssm.get_parameters(Names=[path + name for name in NAMES], WithDecryption=True)
    found = {str(p["Name"]).removeprefix(path): str(p["Value"]) for p in resp.get("Parameters", [])}
    if not found:
        raise Unavailable(f"No secrets found under {path} in SSM Parameter Store.")
    return found
