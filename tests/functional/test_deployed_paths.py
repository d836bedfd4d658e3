"""The AWS calls only a deployed Metro makes, through each function's entry point on moto, so that the IAM gate of
``make test`` (infra/iam_gate.py) measures them under the function that makes them: every function's read of the
stage's secrets from SSM at start, the API's and the background seek's management of the push function's event
source mappings (create, update a stale one, delete), the asynchronous invocations of the seek worker (by the seek
call, by the worker itself, by maintenance), maintenance's fan-out catch-up and its expiry of an idle push
subscription.

Lambda runs no code here (moto's Lambda without Docker answers every invocation itself)."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import time
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import runtime
from chalicelib.config import Config
from chalicelib.core import names
from chalicelib.core.access.oidc import generate_signing_key
from chalicelib.core.replay.seek_jobs import SUCCEEDED
from chalicelib.delivery import event_handlers
from chalicelib.delivery.maintenance import expire_idle_subscriptions
from chalicelib.local.bootstrap import bootstrap
from chalicelib.service.seek import worker_event
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.push_state import queue_arn
from tests.functional.app_client import process_environment
from tests.functional.conftest import stream_event

SECRETS = "/metro-iam-test"
ADMIN_KEY = "deployed-paths-admin-key-0123456789abcdefghij"
PUSH, SEEK = "metro-dev-push", "metro-dev-seek_worker"  # the dev stage's (Chalice's config sets the first)
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "METRO_MODE": "aws", "METRO_SECRETS_SSM_PATH": SECRETS,
       "METRO_PUSH_FUNCTION": PUSH, "METRO_SEEK_FUNCTION": SEEK, "METRO_SEEK_INLINE_MAX_MESSAGES": "1",
       "METRO_SEEK_CHUNK_MESSAGES": "1", "METRO_PULL_WAIT_SECONDS": "0", "METRO_COUNTER_FLUSH_SECONDS": "-1",
       # publish leaves fan-out to the stream and bodies in S3; maintenance catches up at once what is unfanned
       "METRO_DIRECT_FANOUT": "0", "METRO_INLINE_MAX_BYTES": "0", "METRO_FANOUT_CATCHUP_SECONDS": "0"}
P = "iam-paths"
SUB = names.make(P, "subscriptions", "pushed")
HOOK = "https://93.184.216.34/hook"  # an IP literal: no DNS lookup


def _function(name: str, role: str) -> None:
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w") as z:
        z.writestr("app.py", "def handler(event, context):\n    return {}\n")
    aws.client("lambda", Config()).create_function(FunctionName=name, Runtime="python3.12", Role=role,
                                                   Handler="app.handler", Code={"ZipFile": blob.getvalue()})


def _stage() -> None:
    """What the deploy creates (unlabelled: not a function's call): tables, bucket, secrets, the two functions."""
    config = Config()
    bootstrap(config)
    ssm = aws.client("ssm", config)
    secrets = (("ack-secret", "a" * 48), ("admin-key", ADMIN_KEY), ("push-signing-key", generate_signing_key()))
    for name, value in secrets:
        ssm.put_parameter(Name=f"{SECRETS}/{name}", Value=value, Type="SecureString")
    role = aws.client("iam", config).create_role(RoleName="metro-iam-test", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "lambda.amazonaws.com"}}]}))["Role"]["Arn"]
    for function in (PUSH, SEEK):
        _function(function, role)


@pytest.fixture
def stage() -> Iterator[None]:
    with process_environment(ENV, also_saved=("METRO_SEEK_LEASE_SECONDS",)), \
            mock_aws(config={"lambda": {"use_docker": False}}):
        _stage()
        yield


class Api:
    def __init__(self, client: Client) -> None:
        self.client = client

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        resp = self.client.http.request(method, f"/v1/projects/{P}{path}", body=json.dumps(body or {}).encode(),
                                        headers={"Content-Type": "application/json", "x-api-key": ADMIN_KEY})
        assert resp.status_code == 200, (method, path, resp.body)
        return json.loads(resp.body or b"{}")


def _mappings(url: str) -> list[dict[str, Any]]:
    found = aws.client("lambda", Config()).list_event_source_mappings(EventSourceArn=queue_arn(url, "us-east-1"))
    return list(found["EventSourceMappings"])


def _stale_mapping(url: str) -> None:
    """A mapping left with other settings (an earlier deploy's): ensure() updates it rather than adding one."""
    aws.client("lambda", Config()).create_event_source_mapping(
        EventSourceArn=queue_arn(url, "us-east-1"), FunctionName=PUSH, BatchSize=3, Enabled=False)


def _api(client: Client) -> None:
    """The API function: mappings created, updated, deleted; a large seek invokes the worker."""
    api = Api(client)
    api.ok("POST", "", {"description": "deployed paths"})
    api.ok("PUT", "/topics/topic-t", {})
    api.ok("PUT", "/subscriptions/pulled", {"topic": f"projects/{P}/topics/topic-t"})
    pulled = runtime.services().ctx.resources.require_subscription(names.make(P, "subscriptions", "pulled"))
    _stale_mapping(pulled.queue_url)
    api.ok("POST", "/subscriptions/pulled:modifyPushConfig", {"pushConfig": {"pushEndpoint": HOOK}})
    assert [m["BatchSize"] for m in _mappings(pulled.queue_url)] == [10]  # updated, not doubled
    api.ok("DELETE", "/subscriptions/pulled")
    assert _mappings(pulled.queue_url) == []
    api.ok("PUT", "/subscriptions/pushed", {"topic": f"projects/{P}/topics/topic-t", "retainAckedMessages": True,
                                            "pushConfig": {"pushEndpoint": HOOK},
                                            "expirationPolicy": {"ttl": "86400s"}})
    for i in range(3):  # one request each: a chunk ends after the request that reaches its size
        api.ok("POST", "/topics/topic-t:publish", {"messages": [{"data": base64.b64encode(b"m%d" % i).decode()}]})
    api.ok("POST", "/subscriptions/pushed:seek", {"time": "1970-01-01T00:00:00Z"})


def test_each_function_makes_its_deployed_only_calls(stage: None) -> None:
    with Client(app, stage_name="dev") as client:  # the deployed stage's settings: METRO_MODE=aws
        _api(client)
    ctx = runtime.services().ctx
    job = ctx.seek_jobs.get(SUB.path)
    assert job is not None and job.background
    _stale_mapping(job.new_url)  # as if a deploy had changed the mappings' settings while the seek ran

    runtime.reset()  # each function's first invocation reads the stage's secrets under its own role
    os.environ["METRO_SEEK_LEASE_SECONDS"] = "0"  # the seek's worker counts as stalled at once
    ran = event_handlers.maintenance({"time": "2026-01-01T10:05:00Z"})
    assert ran["seeks_resumed"] == 1 and ran["fannedOut"]
    os.environ.pop("METRO_SEEK_LEASE_SECONDS")

    runtime.reset()
    states = [event_handlers.seek_worker(worker_event(job))["state"] for _ in range(10)]
    assert SUCCEEDED in states  # chunks of one message invoke the worker again; the last swaps the generation
    new = runtime.services().ctx.resources.require_subscription(SUB)
    assert [m["BatchSize"] for m in _mappings(new.queue_url)] == [10] and _mappings(job.old_url) == []

    records = stream_event(runtime.services())
    runtime.reset()
    assert event_handlers.fanout(records)["batchItemFailures"] == []
    runtime.reset()
    assert event_handlers.push({"Records": []}) == {"batchItemFailures": []}

    with Client(app, stage_name="dev") as client:  # a second background seek: no stale mapping this time
        Api(client).ok("POST", "/subscriptions/pushed:seek", {"time": "1970-01-01T00:00:00Z"})
    runtime.reset()
    again = runtime.services().ctx.seek_jobs.get(SUB.path)
    assert again is not None and again.seek_id != job.seek_id
    states = [event_handlers.seek_worker(worker_event(again))["state"] for _ in range(10)]
    assert SUCCEEDED in states
    assert len(_mappings(runtime.services().ctx.resources.require_subscription(SUB).queue_url)) == 1

    later = dataclasses.replace(runtime.services().ctx, clock=lambda: time.time() + 2 * 86400)
    with acting_as("maintenance"):  # the hourly expiry, a day after the subscription went idle
        assert expire_idle_subscriptions(later) == [SUB.path]
    assert _mappings(new.queue_url) == []
