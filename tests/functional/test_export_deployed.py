"""Export subscriptions' AWS calls that only a deployed Metro makes, through each function's entry point on moto, so
that the IAM gate of ``make test`` (infra/iam_gate.py) measures them under the function that makes them: the API's
bucket check (with and without an assumed role) and its management of the export function's event source mapping
(created with the config's batch and window, updated, deleted), the export function's PutObject (with an assumed
role) and acks, the background seek's move of the mapping to the new queue, and maintenance's expiry.

Lambda runs no code here (moto's Lambda without Docker answers every invocation itself)."""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import runtime
from chalicelib.config import Config
from chalicelib.core import names
from chalicelib.core.replay.seek_jobs import SUCCEEDED
from chalicelib.core.wire.transforms import JavaScriptUdf, MessageTransform
from chalicelib.delivery import event_handlers
from chalicelib.delivery.maintenance import expire_idle_subscriptions
from chalicelib.local.push_pump import lambda_record
from chalicelib.service.seek import worker_event
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.push_state import queue_arn
from tests.functional.app_client import process_environment
from tests.functional.conftest import stream_event
from tests.functional.test_deployed_paths import ENV, SEEK, Api, _function, _stage

P = "iam-paths"
EXPORT = "metro-dev-export"
BUCKET = "metro-dev-export-files"
ROLE = "arn:aws:iam::123456789012:role/metro-dev-export-writer"
SUB = names.make(P, "subscriptions", "exported")
EXPORT_ENV = {**ENV, "METRO_EXPORT_FUNCTION": EXPORT, "METRO_EXPORT_BUCKETS": "metro-dev-export-*",
              "METRO_EXPORT_ROLES": f"writer@example.com={ROLE}"}


@pytest.fixture
def stage() -> Iterator[None]:
    with process_environment(EXPORT_ENV, also_saved=("METRO_SEEK_LEASE_SECONDS",)), \
            mock_aws(config={"lambda": {"use_docker": False}}):
        _stage()
        role = aws.client("iam", Config()).get_role(RoleName="metro-iam-test")["Role"]["Arn"]
        _function(EXPORT, role)
        aws.client("s3", Config()).create_bucket(Bucket=BUCKET)
        yield


def _mappings(url: str) -> list[dict[str, Any]]:
    found = aws.client("lambda", Config()).list_event_source_mappings(EventSourceArn=queue_arn(url, "us-east-1"),
                                                                       FunctionName=EXPORT)
    return list(found["EventSourceMappings"])


def _received(url: str) -> dict[str, Any]:
    got = aws.client("sqs", Config()).receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                                      MessageSystemAttributeNames=["All"])
    return {"Records": [lambda_record(m, queue_arn(url, "us-east-1"), "us-east-1") for m in got.get("Messages", [])]}


def _transformed_batch_goes_back(url: str) -> None:
    """With message transforms (set where no check runs), the export function invokes the transform function;
    moto's answers with a function error, so the batch goes back unwritten."""
    services = runtime.services()
    rec = services.ctx.resources.require_subscription(SUB)
    udf = MessageTransform(javascript_udf=JavaScriptUdf(function_name="up", code="function up(m) { return m; }"))
    services.ctx.resources.put_subscription(SUB, rec.with_spec(rec.spec.model_copy(
        update={"message_transforms": [udf]})), old_topic=rec.spec.topic)
    with Client(app, stage_name="dev") as client:
        Api(client).ok("POST", "/topics/topic-t:publish", {"messages": [{"data": base64.b64encode(b"t").decode()}]})
    records = stream_event(runtime.services())
    runtime.reset()
    assert event_handlers.fanout(records)["batchItemFailures"] == []
    runtime.reset()
    batch = _received(url)
    assert batch["Records"]
    assert len(event_handlers.export(batch)["batchItemFailures"]) == len(batch["Records"])
    assert len(aws.client("s3", Config()).list_objects_v2(Bucket=BUCKET)["Contents"]) == 1
    services = runtime.services()
    services.ctx.resources.put_subscription(SUB, rec, old_topic=rec.spec.topic)  # as it was


def test_export_paths_of_each_function(stage: None) -> None:
    with Client(app, stage_name="dev") as client:
        api = Api(client)
        api.ok("POST", "", {"description": "export paths"})
        api.ok("PUT", "/topics/topic-t", {})
        api.ok("PUT", "/subscriptions/exported", {
            "topic": f"projects/{P}/topics/topic-t", "retainAckedMessages": True,
            "expirationPolicy": {"ttl": "86400s"},
            "cloudStorageConfig": {"bucket": BUCKET, "maxDuration": "120s", "maxMessages": "2000",
                                   "serviceAccountEmail": "writer@example.com"}})
        rec = runtime.services().ctx.resources.require_subscription(SUB)
        (mapping,) = _mappings(rec.queue_url)
        assert mapping["BatchSize"] == 2000 and mapping.get("MaximumBatchingWindowInSeconds", 120) == 120
        attrs = aws.client("sqs", Config()).get_queue_attributes(QueueUrl=rec.queue_url,
                                                                 AttributeNames=["VisibilityTimeout"])
        assert int(attrs["Attributes"]["VisibilityTimeout"]) >= 240  # above the function's timeout and window
        api.ok("PATCH", "/subscriptions/exported", {"subscription": {"cloudStorageConfig": {
            "bucket": BUCKET, "maxDuration": "60s", "serviceAccountEmail": "writer@example.com"}},
            "updateMask": "cloudStorageConfig"})
        assert [m["BatchSize"] for m in _mappings(rec.queue_url)] == [10_000]  # updated, not doubled
        for m in _mappings(rec.queue_url):  # moto's mapping would hand the messages to a Lambda it does not run
            aws.client("lambda", Config()).update_event_source_mapping(UUID=m["UUID"], Enabled=False)
        for i in range(3):
            api.ok("POST", "/topics/topic-t:publish", {"messages": [{"data": base64.b64encode(b"m%d" % i).decode()}]})
    records = stream_event(runtime.services())
    runtime.reset()
    assert event_handlers.fanout(records)["batchItemFailures"] == []
    runtime.reset()
    batch = _received(rec.queue_url)
    assert len(batch["Records"]) == 3
    assert event_handlers.export(batch) == {"batchItemFailures": []}
    listed = aws.client("s3", Config()).list_objects_v2(Bucket=BUCKET)["Contents"]
    assert len(listed) == 1
    _transformed_batch_goes_back(rec.queue_url)

    with Client(app, stage_name="dev") as client:  # a background seek moves the mapping to the new queue
        Api(client).ok("POST", "/subscriptions/exported:seek", {"time": "1970-01-01T00:00:00Z"})
    runtime.reset()
    job = runtime.services().ctx.seek_jobs.get(SUB.path)
    assert job is not None and job.background
    states = [event_handlers.seek_worker(worker_event(job))["state"] for _ in range(10)]
    assert SUCCEEDED in states
    new = runtime.services().ctx.resources.require_subscription(SUB)
    assert len(_mappings(new.queue_url)) == 1 and _mappings(job.old_url) == []

    later = dataclasses.replace(runtime.services().ctx, clock=lambda: time.time() + 2 * 86400)
    with acting_as("maintenance"):  # the hourly expiry, a day after the subscription went idle
        assert SUB.path in expire_idle_subscriptions(later)
    assert _mappings(new.queue_url) == []
    assert SEEK  # the seek worker of the dev stage exists (test_deployed_paths._stage)
    assert json.dumps(listed[0]["Key"])
