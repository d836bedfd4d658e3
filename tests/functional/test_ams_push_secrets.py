"""AMS's push verification and generated authorization value on moto in-process, through both dialects.

A new endpoint is never verified and never gets the value made for the old one, whichever route changed it
(AMS's :modifyPushConfig, Google's :modifyPushConfig or PATCH); a verification that raced with a change does
not stick; and the generated value is shown to the subscription's project_admins and service_admins only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest

from chalicelib.api import handlers
from chalicelib.api.ams import handlers as ams_handlers
from chalicelib.api.handlers import Incoming
from chalicelib.core.access.identity import CONSUMER, PROJECT_ADMIN, PUBLISHER, SERVICE_ROLES, Principal
from chalicelib.core.errors import Aborted
from chalicelib.core.names import Name
from chalicelib.core.wire.ams import AmsPushRequest
from chalicelib.core.wire.models import AmsPush, PushConfig, Subscription, Topic
from chalicelib.core.wire.requests import ModifyPushConfigRequest, UpdateSubscriptionRequest
from chalicelib.delivery.push import PushDelivery
from chalicelib.runtime import Services
from chalicelib.service import ams as ams_service
from tests.functional.conftest import FakeClock
from tests.functional.test_push_handler import FakeEndpoint, P, failures, msg, publish, sqs_event, sub, topic

OLD, NEW = "https://127.0.0.1:9/old", "https://127.0.0.1:9/new"


@pytest.fixture
def strict(services: Services) -> Services:
    """The deployed push rules (an AMS endpoint must be verified) with 127.0.0.1 allowed for the test endpoints."""
    config = dataclasses.replace(services.ctx.config, push_strict=True, push_allow_list=("127.0.0.1",))
    return Services.build(dataclasses.replace(services.ctx, config=config))


def verified_subscription(svc: Services, monkeypatch: pytest.MonkeyPatch) -> AmsPush:
    """An AMS push subscription on OLD with the generated authorization value, verified."""
    svc.admin.create_topic(topic(), Topic())
    made = svc.ams.create_subscription(sub(), Subscription(topic=topic().path), AmsPushRequest(OLD))
    push = made.spec.ams_push
    assert push is not None and push.authorization_value
    monkeypatch.setattr(ams_service, "fetch_verification_hash", lambda config, url: (200, push.verification_hash))
    verified = svc.ams.verify_push_endpoint(sub()).spec.ams_push
    assert verified is not None and verified.verified
    return verified


def google_modify_push_config(svc: Services, name: Name) -> None:
    svc.admin.modify_push_config(name, ModifyPushConfigRequest(PushConfig(push_endpoint=NEW)))


def google_patch(svc: Services, name: Name) -> None:
    changes = Subscription(push_config=PushConfig(push_endpoint=NEW), ack_deadline_seconds=30)
    svc.admin.patch_subscription(name, UpdateSubscriptionRequest(changes, ("push_config", "ack_deadline_seconds")))


def ams_modify_push_config(svc: Services, name: Name) -> None:
    svc.ams.modify_push_config(name, AmsPushRequest(NEW))


CHANGES: dict[str, Callable[[Services, Name], None]] = {
    "google-modifyPushConfig": google_modify_push_config,
    "google-patch": google_patch,
    "ams-modifyPushConfig": ams_modify_push_config,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_new_endpoint_is_unverified_and_never_gets_the_old_endpoints_value(
        strict: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch,
        change: Callable[[Services, Name], None]) -> None:
    before = verified_subscription(strict, monkeypatch)
    change(strict, sub())
    rec = strict.admin.get_subscription(sub())
    after = rec.spec.ams_push
    assert rec.spec.push_config is not None and rec.spec.push_config.push_endpoint == NEW
    assert after is not None and not after.verified
    assert after.verification_hash and after.verification_hash != before.verification_hash
    assert after.authorization_value and after.authorization_value != before.authorization_value

    endpoint = FakeEndpoint(204)
    publish(strict, msg(b"held"))
    event = sqs_event(strict)
    assert failures(PushDelivery(strict.ctx, post=endpoint, sleep=clock.advance).handle(event)) == {
        r["messageId"] for r in event["Records"]}
    assert endpoint.calls == []  # unverified under the deployed rules: nothing reaches the new endpoint

    monkeypatch.setattr(ams_service, "fetch_verification_hash", lambda config, url: (200, after.verification_hash))
    assert strict.ams.verify_push_endpoint(sub()).spec.ams_push.verified  # type: ignore[union-attr]
    publish(strict, msg(b"pushed"))
    event = sqs_event(strict)
    assert failures(PushDelivery(strict.ctx, post=endpoint, sleep=clock.advance).handle(event)) == set()
    assert {url for url, _, _, _ in endpoint.calls} == {NEW}
    assert {headers["Authorization"] for _, _, headers, _ in endpoint.calls} == {after.authorization_value}


def test_the_same_endpoint_keeps_its_verification_through_googles_dialect(
        strict: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    before = verified_subscription(strict, monkeypatch)
    strict.admin.patch_subscription(sub(), UpdateSubscriptionRequest(Subscription(ack_deadline_seconds=30),
                                                                     ("ack_deadline_seconds",)))
    strict.admin.modify_push_config(sub(), ModifyPushConfigRequest(PushConfig(push_endpoint=OLD)))
    assert strict.admin.get_subscription(sub()).spec.ams_push == before


def test_a_verification_that_raced_with_an_endpoint_change_does_not_stick(
        strict: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    strict.admin.create_topic(topic(), Topic())
    made = strict.ams.create_subscription(sub(), Subscription(topic=topic().path), AmsPushRequest(OLD))
    old = made.spec.ams_push
    assert old is not None

    def old_endpoint_answers_while_the_config_moves(config: object, url: str) -> tuple[int, str]:
        google_modify_push_config(strict, sub())  # the change lands while OLD is being asked
        return 200, old.verification_hash

    monkeypatch.setattr(ams_service, "fetch_verification_hash", old_endpoint_answers_while_the_config_moves)
    with pytest.raises(Aborted):
        strict.ams.verify_push_endpoint(sub())
    now = strict.admin.get_subscription(sub()).spec.ams_push
    assert now is not None and not now.verified
    assert now.authorization_value != old.authorization_value and now.verification_hash != old.verification_hash


# -- who sees the generated value --------------------------------------------------------------------------
def member(role: str, project: str = P) -> Principal:
    return Principal(f"a-{role}", f"uuid-{role}", projects={project: frozenset({role})})


SEES = {"project_admin": (member(PROJECT_ADMIN), True), "service_admin": (Principal("root", "", SERVICE_ROLES), True),
        "consumer": (member(CONSUMER), False), "consumer-and-publisher": (
            Principal("both", "uuid-both", projects={P: frozenset({CONSUMER, PUBLISHER})}), False),
        "admin-of-another-project": (Principal("x", "uuid-x", projects={
            "elsewhere": frozenset({PROJECT_ADMIN}), P: frozenset({CONSUMER})}), False)}


@pytest.mark.parametrize(("principal", "sees"), SEES.values(), ids=SEES.keys())
def test_the_generated_value_is_shown_to_the_subscriptions_admins_only(
        services: Services, monkeypatch: pytest.MonkeyPatch, principal: Principal, sees: bool) -> None:
    monkeypatch.setattr(ams_handlers, "services", lambda: services)
    services.admin.create_topic(topic(), Topic())
    body = {"topic": topic().path, "pushConfig": {"pushEndpoint": OLD}}
    made = ams_handlers.create_subscription(sub(), Incoming(body, {}, member(PROJECT_ADMIN)))
    assert isinstance(made, dict)
    value = made["pushConfig"]["authorizationHeader"]["value"]  # the creator, a project_admin, sees it
    assert len(value) >= 32

    incoming = Incoming({}, {}, principal)
    got = ams_handlers.get_subscription(sub(), incoming)
    listed = ams_handlers.list_subscriptions(P, incoming)
    assert isinstance(got, dict) and isinstance(listed, dict)
    for shown in (got, listed["subscriptions"][0]):
        assert shown["pushConfig"]["authorizationHeader"]["type"] == "autogen"
        assert shown["pushConfig"]["authorizationHeader"].get("value") == (value if sees else None)
    for answer in (got, listed):
        assert (value in json.dumps(answer)) is sees
    # the topic's subscriptions (names only), and Google's dialect, which never renders AMS's settings
    monkeypatch.setattr(handlers, "services", lambda: services)
    for result in (ams_handlers.topic_subscriptions(topic(), incoming), handlers.get_subscription(sub(), incoming),
                   handlers.list_subscriptions(P, incoming)):
        assert value not in json.dumps(result if isinstance(result, dict) else result.to_wire())
