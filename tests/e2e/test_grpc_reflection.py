"""The gRPC edge's standard services, as generic gRPC tooling finds them on the REST port: server reflection lists
google.pubsub.v1's Publisher, Subscriber and SchemaService, the IAM mixin and the health service, and describes
their methods (Pub/Sub's services from the descriptors of chalicelib/api/rpc/descriptors.py, since
google-cloud-pubsub registers its messages but not its services); the health service answers SERVING, for the
server and for each Pub/Sub service.

grpcurl, the usual command-line client for both, is not packaged by Debian (``apt-cache policy grpcurl`` finds
nothing), so these use grpcio-reflection's and grpcio-health-checking's own clients, which requirements-run.txt
installs; the grpcurl test runs only where a ``grpcurl`` binary is on the PATH.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from tests.stack import RunningStack

pytestmark = pytest.mark.e2e

PUBSUB = ("google.pubsub.v1.Publisher", "google.pubsub.v1.Subscriber", "google.pubsub.v1.SchemaService")
EXPECTED = {*PUBSUB, "google.iam.v1.IAMPolicy", "grpc.health.v1.Health"}
TIMEOUT = 30  # seconds per call: an answer or a failure, never a hang


@pytest.fixture(scope="module")
def channel(stack: RunningStack) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(stack.host) as opened:
        grpc.channel_ready_future(opened).result(timeout=TIMEOUT)
        yield opened


def test_reflection_lists_the_services(channel: grpc.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    [answer] = list(stub.ServerReflectionInfo(iter([request]), timeout=TIMEOUT))
    listed = {service.name for service in answer.list_services_response.service}
    assert listed >= EXPECTED, sorted(listed)
    assert "grpc.reflection.v1alpha.ServerReflection" in listed


def _methods(channel: grpc.Channel, service: str) -> set[str]:
    pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    return {m.name for m in pool.FindServiceByName(service).methods}


def test_reflection_describes_iam_and_health(channel: grpc.Channel) -> None:
    assert set(ProtoReflectionDescriptorDatabase(channel).get_services()) >= EXPECTED
    assert _methods(channel, "google.iam.v1.IAMPolicy") == {"SetIamPolicy", "GetIamPolicy", "TestIamPermissions"}
    assert {"Check", "Watch"} <= _methods(channel, "grpc.health.v1.Health")


def test_reflection_describes_the_pubsub_services(channel: grpc.Channel) -> None:
    assert {"CreateTopic", "Publish", "ListTopics", "DeleteTopic"} <= _methods(channel, "google.pubsub.v1.Publisher")
    assert {"CreateSubscription", "Pull", "StreamingPull", "Acknowledge", "ModifyAckDeadline", "Seek"} <= \
        _methods(channel, "google.pubsub.v1.Subscriber")
    assert {"CreateSchema", "ValidateMessage"} <= _methods(channel, "google.pubsub.v1.SchemaService")
    pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    streaming = pool.FindServiceByName("google.pubsub.v1.Subscriber").methods_by_name["StreamingPull"]
    assert streaming.input_type.full_name == "google.pubsub.v1.StreamingPullRequest"
    assert streaming.client_streaming and streaming.server_streaming


@pytest.mark.parametrize("service", ["", *PUBSUB, "google.iam.v1.IAMPolicy"])
def test_health_is_serving(channel: grpc.Channel, service: str) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_health_of_an_unknown_service_is_not_found(channel: grpc.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.RpcError) as failed:
        stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=TIMEOUT)
    assert failed.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.skipif(shutil.which("grpcurl") is None,
                    reason="grpcurl is not installed (Debian does not package it): reflection and health are "
                           "checked with grpcio's own clients above")
def test_grpcurl_lists_and_checks(stack: RunningStack) -> None:
    def grpcurl(*args: str) -> str:
        done = subprocess.run(["grpcurl", "-plaintext", "-max-time", str(TIMEOUT), *args], capture_output=True,
                              text=True, timeout=TIMEOUT + 10, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert set(grpcurl(stack.host, "list").split()) >= EXPECTED
    assert json.loads(grpcurl(stack.host, "grpc.health.v1.Health/Check"))["status"] == "SERVING"
