"""Keys mode refuses the built-in (or an empty) METRO_ACK_SECRET, which keys the stored token hashes, page
tokens and ack ids; the launchers of keys-mode stacks give each run a secret of its own."""

from __future__ import annotations

import secrets

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
