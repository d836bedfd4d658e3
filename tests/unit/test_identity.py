"""The pure parts of identity and access: token hashing, permission decisions, credentials, request bodies,
configuration and the start-up refusals."""

from __future__ import annotations

import secrets

import pytest

from chalicelib.api.account_requests import acl_request, set_policy_request, user_request
from chalicelib.api.auth import credentials
from chalicelib.config import Config
from chalicelib.core.access.accounts import Policy, policy_etag
from chalicelib.core.access.identity import (
    OPEN_PRINCIPAL,
    SERVICE_ROLES,
    Action,
    Principal,
    TokenHasher,
    allowed,
    needs_acl,
    new_token,
    same_secret,
)
from chalicelib.core.errors import InvalidArgument
from chalicelib.runtime import check_secrets

P, Q = "proj", "other"


def user(*roles: str, uuid: str = "u-1") -> Principal:
    return Principal("someone", uuid, frozenset(), {P: frozenset(roles)})


def test_tokens_are_256_random_bits_and_hashes_are_keyed() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50 and all(len(t) == 43 for t in tokens)  # 32 bytes in base64url
    token = next(iter(tokens))
    one, same, other = TokenHasher(b"secret-1"), TokenHasher(b"secret-1"), TokenHasher(b"secret-2")
    assert one.hash(token) == same.hash(token) != other.hash(token)
    assert token not in one.hash(token) and len(one.hash(token)) == 64


def test_secret_comparison() -> None:
    assert same_secret("abc", "abc")
    assert not same_secret("abd", "abc") and not same_secret("", "") and not same_secret("abc", "")


@pytest.mark.parametrize(("roles", "action", "acl", "expected"), [
    (("project_admin",), Action.PROJECT_ADMIN, False, True),
    (("project_admin",), Action.PUBLISH, False, True),  # everything in its project, no ACL entry needed
    (("project_admin",), Action.CONSUME, False, True),
    (("project_admin",), Action.SERVICE_ADMIN, False, False),
    (("publisher",), Action.READ_TOPICS, False, True),
    (("publisher",), Action.READ_SUBSCRIPTIONS, False, False),
    (("publisher",), Action.PUBLISH, False, False),
    (("publisher",), Action.PUBLISH, True, True),
    (("publisher",), Action.CONSUME, True, False),
    (("publisher",), Action.PROJECT_ADMIN, True, False),
    (("consumer",), Action.READ_SUBSCRIPTIONS, False, True),
    (("consumer",), Action.READ_TOPICS, False, False),
    (("consumer",), Action.CONSUME, False, False),
    (("consumer",), Action.CONSUME, True, True),
    (("consumer",), Action.PUBLISH, True, False),
    (("consumer",), Action.PROJECT_MEMBER, False, True),
    ((), Action.PROJECT_MEMBER, False, False),
    ((), Action.AUTHENTICATED, False, True),
    ((), Action.PUBLIC, False, True),
])
def test_decisions(roles: tuple[str, ...], action: Action, acl: bool, expected: bool) -> None:
    who = user(*roles)
    assert allowed(who, action, P, frozenset({"u-1"}) if acl else frozenset()) is expected
    if expected and action not in (Action.AUTHENTICATED, Action.PUBLIC):
        assert not allowed(who, action, Q, frozenset({"u-1"}))  # roles hold in their own project only


def test_service_admin_and_open_mode_may_do_everything() -> None:
    admin = Principal("root", "", SERVICE_ROLES)
    for action in Action:
        assert allowed(admin, action, Q) and allowed(OPEN_PRINCIPAL, action, Q)
        assert not needs_acl(admin, action, Q)


def test_only_publish_and_consume_by_a_holder_of_the_role_look_at_the_acl() -> None:
    assert needs_acl(user("publisher"), Action.PUBLISH, P)
    assert not needs_acl(user("publisher"), Action.PUBLISH, Q)  # no role there: denied without a read
    assert not needs_acl(user("consumer"), Action.PUBLISH, P)
    assert not needs_acl(user("project_admin", "publisher"), Action.PUBLISH, P)
    assert needs_acl(user("consumer"), Action.CONSUME, P)


def test_credentials_come_from_the_three_forms() -> None:
    assert credentials({"x-api-key": " k1 "}, {}) == "k1"
    assert credentials({"authorization": "Bearer k2"}, {}) == "k2"
    assert credentials({"authorization": "bearer k2"}, {}) == "k2"
    assert credentials({}, {"key": "k3"}) == "k3"
    assert credentials({"x-goog-api-key": "k4"}, {}) == "k4"
    assert credentials({"authorization": "Basic abc"}, {}) == ""
    assert credentials({"x-api-key": "k1", "authorization": "Bearer k2"}, {"key": "k3"}) == "k1"


def test_iam_policies_map_onto_acls() -> None:
    body = {"policy": {"etag": "e", "bindings": [{"role": "roles/pubsub.publisher", "members": ["user:a", "user:b"]}]}}
    request = set_policy_request(body, "topics")
    assert request.names == ("a", "b") and request.etag == "e"
    assert set_policy_request({"policy": {}}, "subscriptions").names == ()
    for bad in ({"policy": {"bindings": [{"role": "roles/pubsub.subscriber", "members": ["user:a"]}]}},
                {"policy": {"bindings": [{"role": "roles/owner", "members": ["user:a"]}]}},
                {"policy": {"bindings": [{"role": "roles/pubsub.publisher", "members": ["group:x@y.z"]}]}},
                {"policy": {"bindings": "x"}}, {"policy": 5}):
        with pytest.raises(InvalidArgument):
            set_policy_request(bad, "topics")
    wire = Policy("roles/pubsub.subscriber", ("b", "a")).to_wire()
    assert wire["bindings"] == [{"role": "roles/pubsub.subscriber", "members": ["user:a", "user:b"]}]
    assert wire["etag"] == policy_etag(["a", "b"]) != policy_etag(["a"])


def test_ams_bodies() -> None:
    request = user_request({"projects": [{"project": "p1", "roles": ["consumer", "publisher"]}],
                            "email": "a@b.c", "service_roles": []})
    assert request.projects is not None and request.projects[0].roles == ("consumer", "publisher")
    assert user_request({}).projects is None  # on update: unchanged
    for bad in ({"projects": [{"project": "p1", "roles": ["owner"]}]}, {"service_roles": ["root"]},
                {"email": "nope"}, {"email": 5}, [], {"projects": "p1"}):
        with pytest.raises(InvalidArgument):
            user_request(bad)
    assert acl_request({"authorized_users": ["UserA", "UserB", "UserA"]}).names == ("UserA", "UserB")
    with pytest.raises(InvalidArgument):
        acl_request({"authorized_users": "UserA"})


def test_auth_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METRO_AUTH", raising=False)
    monkeypatch.setenv("METRO_MODE", "local")
    assert Config().auth_mode == "open"
    monkeypatch.setenv("METRO_MODE", "aws")
    assert Config().auth_mode == "keys"
    monkeypatch.setenv("METRO_AUTH_CACHE_SECONDS", "600")
    assert Config().auth_cache_seconds == 60
    monkeypatch.setenv("METRO_AUTH_CACHE_SECONDS", "-5")
    assert Config().auth_cache_seconds == 0
    monkeypatch.delenv("METRO_AUTH_CACHE_SECONDS")
    assert Config().auth_cache_seconds == 30


def test_start_up_refuses_missing_and_built_in_secrets() -> None:
    key = "k" * 40
    check_secrets(Config(auth_mode="open", deployed=False))
    check_secrets(Config(auth_mode="keys", admin_key=key, deployed=False, ack_secret=secrets.token_bytes(32)))
    check_secrets(Config(auth_mode="keys", admin_key=key, deployed=True, ack_secret=secrets.token_bytes(32)))
    for bad in (Config(auth_mode="keys", admin_key="", deployed=False),
                Config(auth_mode="keys", admin_key="short", deployed=False),
                Config(auth_mode="keys", admin_key=key, deployed=True),  # the built-in ack secret
                Config(auth_mode="bogus", deployed=False)):
        with pytest.raises(RuntimeError):
            check_secrets(bad)
