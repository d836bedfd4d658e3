"""Deployed, message transforms run in the transform function (chalicelib/store/transformer.py): the API function
invokes it to check a topic's transforms, the push function to shape a delivery. moto's Lambda runs no code and
answers every invocation with a function error, so these tests also show what a failing transform function does:
the API answers UNAVAILABLE and creates nothing; push sends the batch back untouched. The IAM gate of ``make test``
measures both invocations under their functions."""

from __future__ import annotations

import base64
import json

from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Config
from chalicelib.core import names
from chalicelib.core.wire.transforms import JavaScriptUdf, MessageTransform
from chalicelib.delivery import event_handlers
from chalicelib.store import aws
from tests.functional.conftest import stream_event
from tests.functional.test_deployed_paths import ADMIN_KEY, HOOK, Api, P, _function, stage  # noqa: F401
from tests.functional.test_push_handler import sqs_event

UDF = {"javascriptUdf": {"functionName": "up", "code": "function up(m) { return m; }"}}
SHAPED = names.make(P, "subscriptions", "shaped")


def _transform_function() -> None:
    role = aws.client("iam", Config()).list_roles()["Roles"][0]["Arn"]
    _function(Config().transform_function, role)


def test_the_api_refuses_with_unavailable_when_the_transform_function_fails(stage: None) -> None:  # noqa: F811
    _transform_function()
    with Client(app, stage_name="dev") as client:
        Api(client).ok("POST", "", {"description": "transforms deployed"})
        resp = client.http.request("PUT", f"/v1/projects/{P}/topics/shaped", body=json.dumps(
            {"messageTransforms": [UDF]}).encode(), headers={"Content-Type": "application/json",
                                                             "x-api-key": ADMIN_KEY})
        assert resp.status_code == 503, resp.body
        assert json.loads(resp.body)["error"]["status"] == "UNAVAILABLE"
        missing = client.http.request("GET", f"/v1/projects/{P}/topics/shaped", headers={"x-api-key": ADMIN_KEY})
        assert missing.status_code == 404


def test_push_sends_a_batch_back_when_the_transform_function_fails(stage: None) -> None:  # noqa: F811
    _transform_function()
    with Client(app, stage_name="dev") as client:
        api = Api(client)
        api.ok("POST", "", {"description": "transforms deployed"})
        api.ok("PUT", "/topics/plain", {})
        api.ok("PUT", "/subscriptions/shaped", {"topic": f"projects/{P}/topics/plain",
                                                "pushConfig": {"pushEndpoint": HOOK}})
        api.ok("POST", "/topics/plain:publish", {"messages": [{"data": base64.b64encode(b"x").decode()}]})
    services = runtime.services()
    rec = services.ctx.resources.require_subscription(SHAPED)  # transforms set where no check runs
    udf = MessageTransform(javascript_udf=JavaScriptUdf(function_name="up", code="function up(m) { return m; }"))
    services.ctx.resources.put_subscription(SHAPED, rec.with_spec(rec.spec.model_copy(
        update={"message_transforms": [udf]})), old_topic=rec.spec.topic)
    lam = aws.client("lambda", Config())
    for mapping in lam.list_event_source_mappings()["EventSourceMappings"]:  # moto's would drain the queue
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    assert event_handlers.fanout(stream_event(services))["batchItemFailures"] == []
    event = sqs_event(services, SHAPED)
    assert len(event["Records"]) == 1
    runtime.reset()
    out = event_handlers.push(event)
    assert [f["itemIdentifier"] for f in out["batchItemFailures"]] == [event["Records"][0]["messageId"]]
