"""pushConfig validation, :modifyPushConfig, the push index and (deployed) event source mappings, on moto."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from typing import Any

import pytest

from chalicelib.api.parsing import modify_push_config_request, subscription_request, update_subscription_request
from chalicelib.core import names
from chalicelib.core.errors import FailedPrecondition, InvalidArgument
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.models import PushConfig, Subscription, Topic
from chalicelib.local.push_pump import PushPump
from chalicelib.runtime import Services
from chalicelib.service.admin import AdminService
from chalicelib.service.push_config import validate
from chalicelib.store import aws
from chalicelib.store.mappings import MappingStore
from chalicelib.store.push_state import PushStore, queue_arn, queue_key
from tests.functional.conftest import FakeClock

P = "push-project"
TOPIC = names.make(P, "topics", "topic-a")
SUB = names.make(P, "subscriptions", "sub-a")
PUBLIC = "https://93.184.216.34/hook"  # an IP literal: no DNS lookup in tests


@pytest.fixture
def ready(services: Services, clock: FakeClock) -> Services:
    services.admin.create_topic(TOPIC, Topic())
    return services


def create(services: Services, push: dict[str, Any] | None = None) -> SubscriptionRecord:
    body: dict[str, Any] = {"topic": TOPIC.path}
    if push is not None:
        body["pushConfig"] = push
    return services.admin.create_subscription(SUB, subscription_request(body, SUB))


def modify_push_config(admin: AdminService, name: names.Name, body: dict[str, Any]) -> None:
    """``:modifyPushConfig`` as the api layer runs it: parse the body, then the use case."""
    admin.modify_push_config(name, modify_push_config_request(body, name))


@pytest.mark.parametrize("endpoint", ["ftp://example.com/x", "not a url", "http://169.254.169.254/latest",
                                      "http:///nohost", "http://[ff02::1]/x"])
def test_invalid_endpoints_are_refused_at_create(ready: Services, endpoint: str) -> None:
    with pytest.raises(InvalidArgument):
        create(ready, {"pushEndpoint": endpoint})


def test_local_mode_accepts_loopback_and_deployed_mode_refuses_it(ready: Services) -> None:
    create(ready, {"pushEndpoint": "http://127.0.0.1:8080/hook"})
    deployed = Services.build(dataclasses.replace(ready.ctx, config=dataclasses.replace(ready.ctx.config,
                                                                                    deployed=True)))
    with pytest.raises(InvalidArgument, match="https"):
        modify_push_config(deployed.admin, SUB, {"pushConfig": {"pushEndpoint": "http://93.184.216.34/x"}})
    with pytest.raises(InvalidArgument, match="loopback"):
        modify_push_config(deployed.admin, SUB, {"pushConfig": {"pushEndpoint": "https://127.0.0.1/x"}})
    allowed = dataclasses.replace(deployed.ctx.config, push_allow_list=("127.0.0.0/8",))
    spec = Subscription(push_config=PushConfig(push_endpoint="https://127.0.0.1/x"))
    validate(dataclasses.replace(deployed.ctx, config=allowed), spec)  # the operator allows it


def test_oidc_token_needs_an_email_and_only_one_wrapper(ready: Services) -> None:
    with pytest.raises(InvalidArgument, match="service_account_email"):
        create(ready, {"pushEndpoint": "http://127.0.0.1/x", "oidcToken": {"audience": "a"}})
    with pytest.raises(InvalidArgument, match="only one"):
        create(ready, {"pushEndpoint": "http://127.0.0.1/x", "noWrapper": {}, "pubsubWrapper": {}})
    deployed = dataclasses.replace(ready.ctx.config, deployed=True, push_signing_key="")
    services = Services.build(dataclasses.replace(ready.ctx, config=deployed))
    with pytest.raises(FailedPrecondition, match="METRO_PUSH_SIGNING_KEY"):
        create(services, {"pushEndpoint": PUBLIC, "oidcToken": {"serviceAccountEmail": "a@b.c"}})


def test_modify_push_config_switches_between_push_and_pull(ready: Services) -> None:
    create(ready)
    store = PushStore(ready.ctx.config)
    pump = PushPump(ready.ctx.config, lambda e, c: {"batchItemFailures": []})
    assert pump.push_subscriptions() == []
    modify_push_config(ready.admin, SUB, {"pushConfig": {"pushEndpoint": "http://127.0.0.1:1/x"}})
    wire = ready.admin.get_subscription(SUB).spec.reported().to_wire()
    assert wire["pushConfig"] == {"pushEndpoint": "http://127.0.0.1:1/x"}
    assert [r.name for r in pump.push_subscriptions()] == [SUB.path]
    key = queue_key(ready.ctx.resources.require_subscription(SUB).queue_url)
    assert store.index_get(key) == SUB.path
    modify_push_config(ready.admin, SUB, {"pushConfig": {}})
    assert ready.admin.get_subscription(SUB).spec.reported().to_wire()["pushConfig"] == {}
    assert pump.push_subscriptions() == []
    assert store.index_get(key) == SUB.path  # still findable: a handler may hold its messages
    modify_push_config(ready.admin, SUB, {})  # no pushConfig at all: pull
    with pytest.raises(InvalidArgument, match="Unknown name"):
        modify_push_config(ready.admin, SUB, {"pushConfig": {}, "extra": 1})
    with pytest.raises(InvalidArgument):
        modify_push_config(ready.admin, SUB, {"pushConfig": {"pushEndpoint": "gopher://x"}})
    ready.admin.delete_subscription(SUB)
    assert store.index_get(key) is None


def test_patch_push_config_validates_only_changes(ready: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    create(ready, {"pushEndpoint": "http://127.0.0.1:1/x"})
    with pytest.raises(InvalidArgument):
        ready.admin.patch_subscription(SUB, update_subscription_request(
            {"subscription": {"pushConfig": {"pushEndpoint": "http://224.0.0.1/"}}, "updateMask": "pushConfig"}, SUB))
    calls: list[str] = []
    import chalicelib.service.push_config as pc

    monkeypatch.setattr(pc, "validate_push_endpoint", lambda url, **_: calls.append(url))
    ready.admin.patch_subscription(SUB, update_subscription_request(
        {"subscription": {"labels": {"a": "b"}}, "updateMask": "labels"}, SUB))
    assert calls == []


def test_queue_names_and_arns() -> None:
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/metro-abc-42.fifo"
    assert queue_arn(url, "eu-west-1") == "arn:aws:sqs:eu-west-1:123456789012:metro-abc-42.fifo"
    assert queue_key(url) == "metro-abc" == queue_key("arn:aws:sqs:eu-west-1:1:metro-abc-7")
    assert queue_arn("http://127.0.0.1:4566/000000000000/q-1", "cn-north-1").startswith("arn:aws-cn:sqs:")


# -- deployed mode: event source mappings through the Lambda API --------------------------------------


def _push_function(services: Services) -> str:
    iam = aws.client("iam", services.ctx.config)
    role = iam.create_role(RoleName="metro-push", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "lambda.amazonaws.com"}}]}))
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w") as z:
        z.writestr("app.py", "def push(event, context):\n    return {}\n")
    aws.client("lambda", services.ctx.config).create_function(
        FunctionName="metro-test-push", Runtime="python3.12", Role=role["Role"]["Arn"], Handler="app.push",
        Code={"ZipFile": blob.getvalue()}, Timeout=10)
    return "metro-test-push"


def test_deployed_mode_manages_event_source_mappings(ready: Services) -> None:
    function = _push_function(ready)
    config = dataclasses.replace(ready.ctx.config, deployed=True, push_function=function,
                                 push_signing_key="", push_max_concurrency=3)
    mappings = MappingStore(config)
    services = Services.build(dataclasses.replace(ready.ctx, config=config, mappings=mappings))
    create(services, {"pushEndpoint": PUBLIC})
    rec = services.ctx.resources.require_subscription(SUB)
    arn = queue_arn(rec.queue_url, config.region)
    found = mappings.find(arn)
    assert len(found) == 1
    assert found[0]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert found[0]["BatchSize"] == 10
    modify_push_config(services.admin, SUB, {"pushConfig": {"pushEndpoint": PUBLIC + "/other"}})
    assert len(mappings.find(arn)) == 1  # same queue: the mapping stays
    assert mappings.ensure(arn) == found[0]["UUID"]  # idempotent
    modify_push_config(services.admin, SUB, {"pushConfig": {}})
    assert mappings.find(arn) == []
    modify_push_config(services.admin, SUB, {"pushConfig": {"pushEndpoint": PUBLIC}})
    assert len(mappings.find(arn)) == 1
    services.admin.delete_subscription(SUB)
    assert mappings.find(arn) == []


def test_local_mode_never_creates_event_source_mappings(ready: Services) -> None:
    create(ready, {"pushEndpoint": "http://127.0.0.1:1/x"})
    listed = aws.client("lambda", ready.ctx.config).list_event_source_mappings()
    assert listed["EventSourceMappings"] == []
