"""Unknown tokens on moto in-process (METRO_AUTH=keys): a token that resolves to no user is remembered for a few
seconds, so repeating it costs one identity read per interval instead of one per request; a token issued
through this process is never refused because it was presented, unknown, before."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from chalicelib.core.access.accounts import ProjectRoles, User
from chalicelib.core.errors import Unauthenticated
from chalicelib.core.wire.requests import ProjectRequest, UserRequest
from chalicelib.runtime import Services
from chalicelib.service import access, accounts
from chalicelib.store.identity import IdentityStore
from tests.functional.conftest import FakeClock

ADMIN_KEY = "unknown-tokens-admin-key-0123456789abcdef"
PROJECT = "unknown-tokens"
UNKNOWN = "a-token-metro-never-issued-0123456789abcdefgh"


class CountedIdentity(IdentityStore):
    """The identity store, counting the token look-ups (each one is a strongly consistent read)."""

    lookups = 0

    def user_for_token(self, token_hash: str) -> User | None:
        self.lookups += 1
        return super().user_for_token(token_hash)


def keys_services(services: Services, cache_seconds: float) -> tuple[Services, CountedIdentity]:
    config = dataclasses.replace(services.ctx.config, auth_mode="keys", admin_key=ADMIN_KEY,
                                 auth_cache_seconds=cache_seconds)
    counted = CountedIdentity(config)
    return Services.build(dataclasses.replace(services.ctx, config=config, identity=counted)), counted


@pytest.fixture
def keys(services: Services) -> Iterator[tuple[Services, CountedIdentity]]:
    yield keys_services(services, 30)


def refused(svc: Services, token: str) -> bool:
    try:
        svc.access.authenticate(token)
    except Unauthenticated:
        return True
    return False


def test_a_repeated_unknown_token_costs_one_read_per_interval(keys: tuple[Services, CountedIdentity],
                                                               clock: FakeClock) -> None:
    svc, counted = keys
    assert all(refused(svc, UNKNOWN) for _ in range(50))
    assert counted.lookups == 1
    clock.advance(access.UNKNOWN_TOKEN_SECONDS - 0.01)
    assert refused(svc, UNKNOWN) and counted.lookups == 1
    clock.advance(0.01)  # the interval is over: asked again
    assert refused(svc, UNKNOWN) and counted.lookups == 2
    assert refused(svc, "another-unknown-token") and counted.lookups == 3  # each distinct token is asked once


def test_unknown_tokens_are_never_remembered_longer_than_principals(services: Services, clock: FakeClock) -> None:
    svc, counted = keys_services(services, 2)
    assert refused(svc, UNKNOWN) and refused(svc, UNKNOWN) and counted.lookups == 1
    clock.advance(2)
    assert refused(svc, UNKNOWN) and counted.lookups == 2
    svc, counted = keys_services(services, 0)  # no cache at all: every request reads
    assert refused(svc, UNKNOWN) and refused(svc, UNKNOWN) and counted.lookups == 2


def test_a_token_issued_here_is_accepted_at_once_though_it_was_refused_before(
        keys: tuple[Services, CountedIdentity], monkeypatch: pytest.MonkeyPatch) -> None:
    svc, _ = keys
    admin = svc.access.authenticate(ADMIN_KEY)
    svc.accounts.create_project(PROJECT, ProjectRequest("p"), admin)
    issued = iter(["first-token-0123456789abcdefghijklmnopqrstu", "second-token-0123456789abcdefghijklmnopqrs"])
    monkeypatch.setattr(accounts, "new_token", lambda: next(issued))  # tokens known before they are issued

    assert refused(svc, "first-token-0123456789abcdefghijklmnopqrstu")
    token = svc.accounts.create_user("erin", UserRequest(projects=(ProjectRoles(PROJECT, ("consumer",)),)),
                                     admin).token
    assert svc.access.authenticate(token).name == "erin"  # no clock advance: the negative entry went

    assert refused(svc, "second-token-0123456789abcdefghijklmnopqrs")
    refreshed = svc.accounts.refresh_token("erin").token
    assert svc.access.authenticate(refreshed).name == "erin"
    assert refused(svc, token)  # the refreshed-away token is refused at once
