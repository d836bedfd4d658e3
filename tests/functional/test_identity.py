"""Identity on moto, through the services (METRO_AUTH=keys): tokens stored only as hashes, refresh and
deletion within the cache bound across two warm instances, the warm check reads nothing, ACLs through
AMS's and Google's dialects, AMS's user listings, and push identities."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from chalicelib.core.access.accounts import ProjectRoles
from chalicelib.core.access.identity import Action
from chalicelib.core.errors import Aborted, InvalidArgument, NotFound, PermissionDenied, Unauthenticated
from chalicelib.core.names import make
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.core.wire.requests import (
    AclRequest,
    PageRequest,
    PermissionsQuery,
    ProjectRequest,
    PushIdentitiesRequest,
    UpdateTopicRequest,
    UserRequest,
)
from chalicelib.runtime import Services
from chalicelib.store import aws
from tests.functional.conftest import FakeClock

ADMIN_KEY = "functional-admin-key-0123456789abcdefghij"
PROJECT = "idp"
TOPIC = make(PROJECT, "topics", "topic-1")
SUB = make(PROJECT, "subscriptions", "sub-1")


@pytest.fixture
def keys(services: Services) -> Iterator[Services]:
    config = dataclasses.replace(services.ctx.config, auth_mode="keys", admin_key=ADMIN_KEY, auth_cache_seconds=30)
    yield Services.build(dataclasses.replace(services.ctx, config=config))


def make_user(svc: Services, name: str, role: str) -> str:
    view = svc.accounts.create_user(name, UserRequest(projects=(ProjectRoles(PROJECT, (role,)),)),
                                    svc.access.authenticate(ADMIN_KEY))
    return view.token


def with_project(svc: Services) -> None:
    svc.accounts.create_project(PROJECT, ProjectRequest("p"), svc.access.authenticate(ADMIN_KEY))


def test_tokens_are_random_shown_once_and_stored_only_as_keyed_hashes(keys: Services) -> None:
    with_project(keys)
    token = make_user(keys, "alice", "publisher")
    assert len(token) >= 43 and token != make_user(keys, "bob", "publisher")
    assert keys.accounts.get_user("alice").to_wire()["token"] == ""
    cfg = keys.ctx.config
    items = aws.client("dynamodb", cfg).scan(TableName=cfg.resources_table)["Items"]
    assert items and token not in str(items)
    assert keys.access.hasher.hash(token) in str(items)  # positive control: the hash is what is kept


def test_refresh_and_deletion_take_effect_here_at_once_and_elsewhere_within_the_bound(
        keys: Services, clock: FakeClock) -> None:
    other = Services.build(keys.ctx)  # a second warm instance over the same tables
    with_project(keys)
    old = make_user(keys, "carol", "consumer")
    assert other.access.authenticate(old).name == "carol"  # now cached there
    new = keys.accounts.refresh_token("carol").token
    with pytest.raises(Unauthenticated):
        keys.access.authenticate(old)
    assert keys.access.authenticate(new).name == "carol"
    clock.advance(29)
    assert other.access.authenticate(old).name == "carol"  # still within the bound
    clock.advance(1)
    with pytest.raises(Unauthenticated):
        other.access.authenticate(old)
    assert other.access.authenticate(new).name == "carol"
    keys.accounts.delete_user("carol")
    with pytest.raises(Unauthenticated):
        keys.access.authenticate(new)
    clock.advance(30)
    with pytest.raises(Unauthenticated):
        other.access.authenticate(new)


def test_a_warm_check_reads_nothing(keys: Services) -> None:
    with_project(keys)
    token = make_user(keys, "dave", "publisher")
    keys.admin.create_topic(TOPIC, Topic())
    keys.access.modify_acl(TOPIC, AclRequest(("dave",)))
    counter = aws.RequestCounter()
    aws.count_requests(counter)
    try:
        for _ in range(2):
            principal = keys.access.authenticate(token)
            keys.access.authorize(principal, Action.PUBLISH, PROJECT, TOPIC)
        first = sum(t.calls for t in counter.snapshot().values())
        for _ in range(5):
            principal = keys.access.authenticate(token)
            keys.access.authorize(principal, Action.PUBLISH, PROJECT, TOPIC)
        assert first > 0  # the cold check read the token, the user and the ACL
        assert sum(t.calls for t in counter.snapshot().values()) == first
    finally:
        aws.count_requests(None)


def test_acl_dialects_share_one_list(keys: Services, clock: FakeClock) -> None:
    with_project(keys)
    erin = keys.access.authenticate(make_user(keys, "erin", "publisher"))
    keys.admin.create_topic(TOPIC, Topic())
    with pytest.raises(PermissionDenied):
        keys.access.authorize(erin, Action.PUBLISH, PROJECT, TOPIC)
    policy = keys.access.set_policy(TOPIC, AclRequest(("erin",), keys.access.policy(TOPIC).to_wire()["etag"]))
    assert policy.to_wire()["bindings"] == [{"role": "roles/pubsub.publisher", "members": ["user:erin"]}]
    assert keys.access.authorized_users(TOPIC).to_wire() == {"authorized_users": ["erin"]}
    shown = keys.accounts.get_user("erin").to_wire()["projects"]  # AMS's user view lists the ACL entries
    assert shown == [{"project": PROJECT, "roles": ["publisher"], "topics": [TOPIC.id], "subscriptions": []}]
    keys.access.authorize(erin, Action.PUBLISH, PROJECT, TOPIC)
    query = PermissionsQuery(("pubsub.topics.publish", "pubsub.topics.delete", "pubsub.topics.get", "x.y"))
    assert keys.access.test_permissions(erin, TOPIC, query).permissions == ("pubsub.topics.publish",
                                                                            "pubsub.topics.get")
    with pytest.raises(Aborted):  # a stale etag
        keys.access.set_policy(TOPIC, AclRequest((), "AAAAAAAAAAA="))
    with pytest.raises(NotFound):  # AMS: users that are not members of the project
        keys.access.modify_acl(TOPIC, AclRequest(("erin", "nobody")))
    with pytest.raises(NotFound):
        keys.access.modify_acl(make(PROJECT, "topics", "missing"), AclRequest(()))
    keys.access.modify_acl(TOPIC, AclRequest(()))
    with pytest.raises(PermissionDenied):  # this instance sees its own change at once
        keys.access.authorize(erin, Action.PUBLISH, PROJECT, TOPIC)


def test_recreated_resources_start_with_an_empty_acl(keys: Services) -> None:
    with_project(keys)
    keys.admin.create_topic(TOPIC, Topic())
    make_user(keys, "fay", "publisher")
    keys.access.modify_acl(TOPIC, AclRequest(("fay",)))
    keys.admin.patch_topic(TOPIC, UpdateTopicRequest(Topic(labels={"a": "b"}), ("labels",)))
    assert keys.access.authorized_users(TOPIC).names == ("fay",)  # a patch keeps the ACL
    keys.admin.delete_topic(TOPIC)
    keys.admin.create_topic(TOPIC, Topic())
    assert keys.access.authorized_users(TOPIC).names == ()


def test_user_listings_page_filter_and_hide_secrets_from_project_admins(keys: Services) -> None:
    with_project(keys)
    for name in ("u1", "u2", "u3"):
        make_user(keys, name, "consumer")
    keys.accounts.create_user("loner", UserRequest(), keys.access.authenticate(ADMIN_KEY))
    first = keys.accounts.list_users(PageRequest(2)).to_wire()
    assert [u["name"] for u in first["users"]] == ["loner", "u1"] and first["totalSize"] == 4
    rest = keys.accounts.list_users(PageRequest(0, first["nextPageToken"])).to_wire()
    assert [u["name"] for u in rest["users"]] == ["u2", "u3"] and rest["nextPageToken"] == ""
    members = keys.accounts.list_users(PageRequest(0), PROJECT).to_wire()
    assert [u["name"] for u in members["users"]] == ["u1", "u2", "u3"]
    with pytest.raises(InvalidArgument):
        keys.accounts.list_users(PageRequest(0, first["nextPageToken"]), PROJECT)  # another listing's token
    padmin = keys.access.authenticate(make_user(keys, "boss", "project_admin"))
    shown = keys.accounts.list_members(PROJECT, PageRequest(0), padmin).to_wire()["users"][0]
    assert shown["token"] == "" and shown["service_roles"] == [] and "created_by" not in shown


OWN_PUSHER = f"pusher@{PROJECT}.iam.gserviceaccount.com"


def test_push_identities_are_required_in_keys_mode(keys: Services) -> None:
    with_project(keys)
    keys.admin.create_topic(TOPIC, Topic())
    spec = Subscription.model_validate({"topic": TOPIC.path, "pushConfig": {
        "pushEndpoint": "http://127.0.0.1:9/push", "oidcToken": {"serviceAccountEmail": OWN_PUSHER}}})
    with pytest.raises(PermissionDenied):
        keys.admin.create_subscription(SUB, spec)
    with pytest.raises(PermissionDenied):  # a project registers only identities it owns
        keys.accounts.set_push_identities(PROJECT, PushIdentitiesRequest(("pusher@example.com",)))
    keys.accounts.set_push_identities(PROJECT, PushIdentitiesRequest((OWN_PUSHER,)))
    assert keys.admin.create_subscription(SUB, spec).spec.push_config is not None


def test_open_mode_ignores_credentials_and_lets_projects_spring_into_existence(services: Services) -> None:
    assert services.access.open
    for token in ("", "garbage", ADMIN_KEY):
        assert services.access.authenticate(token).is_service_admin
    assert services.accounts.get_project("never-made").to_wire()["name"] == "never-made"
    services.admin.create_topic(make("never-made", "topics", "topic-1"), Topic())  # no project item needed
    with pytest.raises(Unauthenticated):  # positive control: the same call in keys mode
        Services.build(dataclasses.replace(services.ctx, config=dataclasses.replace(
            services.ctx.config, auth_mode="keys", admin_key=ADMIN_KEY))).access.authenticate("garbage")
