"""The real local stack refuses keys mode on the built-in METRO_ACK_SECRET, saying which setting to set."""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest

from chalicelib.config import LOCAL_ACK_SECRET
from tests.stack import ROOT, free_port, stack_env

pytestmark = pytest.mark.e2e


def test_keys_mode_on_the_built_in_ack_secret_does_not_start() -> None:
    env = stack_env(free_port(), free_port(), {"METRO_AUTH": "keys", "METRO_ADMIN_KEY": secrets.token_urlsafe(32)})
    env["METRO_ACK_SECRET"] = LOCAL_ACK_SECRET
    done = subprocess.run([sys.executable, "-m", "chalicelib.local"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "Metro cannot start: METRO_AUTH=keys needs METRO_ACK_SECRET" in done.stderr, done.stderr
    assert "Metro listening" not in done.stdout
