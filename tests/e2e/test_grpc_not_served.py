"""Where Metro does not serve gRPC (METRO_GRPC=0), google-cloud-pubsub's default transport fails at once with
UNIMPLEMENTED and a message naming the fix (the REST transport), instead of retrying until its deadline (600 s
for a publish): the REST port answers an HTTP/2 connection with trailers-only UNIMPLEMENTED
(chalicelib/local/grpc_edge.py ``refuse_http2``), which the clients do not retry. REST keeps working there."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.stack import RunningStack, start_stack

pytestmark = pytest.mark.e2e

TIMEOUT = 30.0  # what the calls are given: far below the publisher's 600 s default
FAST = 10.0  # how soon they must fail: no retrying until a deadline
TOPIC = "projects/no-grpc/topics/t"


@pytest.fixture(scope="module")
def rest_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("no-grpc") / "metro.log", {"METRO_GRPC": "0"})
    yield running
    running.stop()


def _grpc_publisher(host: str) -> Any:
    saved = os.environ.get("PUBSUB_EMULATOR_HOST")
    os.environ["PUBSUB_EMULATOR_HOST"] = host  # read when the client is built: an insecure gRPC channel
    try:
        return pubsub_v1.PublisherClient()
    finally:
        if saved is None:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        else:
            os.environ["PUBSUB_EMULATOR_HOST"] = saved


def _says_use_rest(error: gexc.GoogleAPICallError) -> None:
    assert isinstance(error, gexc.MethodNotImplemented), repr(error)
    assert error.grpc_status_code == grpc.StatusCode.UNIMPLEMENTED
    assert "use the REST transport" in error.message and "transport='rest'" in error.message, error.message


def test_the_stack_says_it_does_not_serve_grpc(rest_only: RunningStack) -> None:
    assert "(gRPC not served)" in rest_only.log_path.read_text()
    assert requests.get(rest_only.url + "/", timeout=TIMEOUT).status_code == 200  # REST is served as ever


def test_default_publisher_fails_fast_with_unimplemented(rest_only: RunningStack) -> None:
    publisher = _grpc_publisher(rest_only.host)
    started = time.monotonic()
    future = publisher.publish(TOPIC, b"x", timeout=TIMEOUT)
    with pytest.raises(gexc.MethodNotImplemented) as failed:
        future.result(timeout=TIMEOUT + 5)
    elapsed = time.monotonic() - started
    _says_use_rest(failed.value)
    assert elapsed < FAST, f"the publish took {elapsed:.1f} s to fail"
    publisher.stop()


def test_admin_calls_fail_fast_with_unimplemented(rest_only: RunningStack) -> None:
    publisher = _grpc_publisher(rest_only.host)
    started = time.monotonic()
    with pytest.raises(gexc.MethodNotImplemented) as failed:
        publisher.create_topic(name=TOPIC, timeout=TIMEOUT)
    _says_use_rest(failed.value)
    assert time.monotonic() - started < FAST


def test_health_check_fails_fast_too(rest_only: RunningStack) -> None:
    with grpc.insecure_channel(rest_only.host) as channel:
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as failed:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT)
        assert failed.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert time.monotonic() - started < FAST
