"""The gRPC edge's container entry point (``python -m chalicelib.container``, the command of infra/grpc/Dockerfile) as
a process against the test stack's AWS emulator: it listens with the health service, serves google-cloud-pubsub,
refuses a stream beyond its cap at once (health checks still answer), refuses to start on what the Lambda functions
refuse, and on SIGTERM ends its open streams UNAVAILABLE after the grace period and exits 0. A subscriber whose
stream ended so carries on through the next task at the same address, as behind the load balancer. (The rehearsal
runs it against a deployed stage in keys mode: tests/rehearsal/.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.cloud import pubsub_v1
from google.pubsub_v1 import types
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.stack import ROOT, RunningStack, free_port

GRACE = 2.0
LISTENING = "Metro gRPC edge listening"


def edge_env(stack: RunningStack, port: int, **extra: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("METRO_", "PUBSUB_EMULATOR_HOST"))}
    return {**kept, "AWS_ENDPOINT_URL": stack.emulator_url, "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test", "METRO_GRPC_PORT": str(port), "METRO_GRPC_GRACE_SECONDS": f"{GRACE:g}",
            "METRO_PULL_WAIT_SECONDS": "2", "PYTHONUNBUFFERED": "1", **extra}


class Edge:
    def __init__(self, stack: RunningStack, port: int, log: Path, **extra: str) -> None:
        self.host, self.log = f"127.0.0.1:{port}", log
        with log.open("w") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "chalicelib.container"], cwd=ROOT,
                                            env=edge_env(stack, port, **extra), stdout=out, stderr=subprocess.STDOUT)

    def wait_listening(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while LISTENING not in self.log.read_text():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=GRACE + 20)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def edges(stack: RunningStack, tmp_path: Path) -> Iterator[Any]:
    started: list[Edge] = []

    def start(port: int, **extra: str) -> Edge:
        edge = Edge(stack, port, tmp_path / f"edge-{len(started)}.log", **extra)
        started.append(edge)
        return edge

    yield start
    for edge in started:
        edge.kill()


def clients(host: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", host)
    try:
        return pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    finally:
        monkeypatch.delenv("PUBSUB_EMULATOR_HOST")


def test_it_serves_health_and_pubsub_and_ends_open_streams_unavailable_on_sigterm(
        edges: Any, monkeypatch: pytest.MonkeyPatch, unique: str) -> None:
    edge = edges(free_port())
    edge.wait_listening()
    channel = grpc.insecure_channel(edge.host)
    health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert health.status == health_pb2.HealthCheckResponse.SERVING  # what the target group checks
    publisher, subscriber = clients(edge.host, monkeypatch)
    topic, sub = f"projects/container/topics/t-{unique}", f"projects/container/subscriptions/s-{unique}"
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=sub, topic=topic)
    sent = {publisher.publish(topic, f"m{i}".encode()).result(timeout=30) for i in range(5)}
    pulled = subscriber.pull(subscription=sub, max_messages=1, timeout=30).received_messages
    assert [m.message.message_id for m in pulled if m.message.message_id in sent] == [pulled[0].message.message_id]

    stream = channel.stream_stream("/google.pubsub.v1.Subscriber/StreamingPull",
                                   request_serializer=types.StreamingPullRequest.serialize,
                                   response_deserializer=types.StreamingPullResponse.deserialize)
    hold = threading.Event()

    def requests() -> Iterator[Any]:
        yield types.StreamingPullRequest(subscription=sub, stream_ack_deadline_seconds=60, max_outstanding_messages=1)
        hold.wait(60)

    call = stream(requests())
    assert next(call).received_messages  # the stream is open and has handed out a message
    signalled = time.monotonic()
    edge.process.send_signal(signal.SIGTERM)
    with pytest.raises(grpc.RpcError) as ended:
        next(call)
    hold.set()
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE  # google-cloud-pubsub retries it on a new stream
    assert GRACE - 0.5 <= time.monotonic() - signalled <= GRACE + 5  # the grace period, then the end
    assert edge.process.wait(timeout=20) == 0
    log = edge.log.read_text()
    assert "stopping" in log and "Metro gRPC edge stopped" in log and "Traceback" not in log


def test_a_subscriber_carries_on_through_the_next_task(edges: Any, monkeypatch: pytest.MonkeyPatch,
                                                       unique: str) -> None:
    """A task stops (SIGTERM), another serves the same address (the load balancer's): subscribe() reconnects by
    itself and receives what is published after."""
    port = free_port()
    first = edges(port)
    first.wait_listening()
    publisher, subscriber = clients(first.host, monkeypatch)
    topic, sub = f"projects/container/topics/t-{unique}", f"projects/container/subscriptions/s-{unique}"
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=sub, topic=topic)
    seen: dict[bytes, int] = {}
    arrived = threading.Condition()

    def callback(message: Any) -> None:
        message.ack()
        with arrived:
            seen[message.data] = seen.get(message.data, 0) + 1
            arrived.notify_all()

    future = subscriber.subscribe(sub, callback)
    try:
        publisher.publish(topic, b"before").result(timeout=30)
        with arrived:
            assert arrived.wait_for(lambda: b"before" in seen, 30)
        assert first.terminate() == 0
        second = edges(port)
        second.wait_listening()
        publisher.publish(topic, b"after").result(timeout=60)
        with arrived:
            assert arrived.wait_for(lambda: b"after" in seen, 60), seen
        assert future.running()  # the stream's end was retried, not reported
    finally:
        future.cancel()
        future.result(timeout=30)


def test_streams_beyond_the_cap_end_unavailable_and_health_checks_still_answer(
        edges: Any, monkeypatch: pytest.MonkeyPatch, unique: str) -> None:
    """Streams may not take the whole pool: the one beyond METRO_GRPC_MAX_STREAMS ends UNAVAILABLE at once (the
    client retries it), and the health check and unary calls are still served."""
    edge = edges(free_port(), METRO_GRPC_WORKERS="8", METRO_GRPC_MAX_STREAMS="2")
    edge.wait_listening()
    publisher, subscriber = clients(edge.host, monkeypatch)
    topic, sub = f"projects/container/topics/t-{unique}", f"projects/container/subscriptions/s-{unique}"
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=sub, topic=topic)
    channel = grpc.insecure_channel(edge.host)
    stream = channel.stream_stream("/google.pubsub.v1.Subscriber/StreamingPull",
                                   request_serializer=types.StreamingPullRequest.serialize,
                                   response_deserializer=types.StreamingPullResponse.deserialize)
    hold = threading.Event()

    def requests() -> Iterator[Any]:
        yield types.StreamingPullRequest(subscription=sub, stream_ack_deadline_seconds=60)
        hold.wait(60)

    calls = [stream(requests()) for _ in range(3)]
    ended = threading.Condition()
    for call in calls:
        call.add_done_callback(lambda _: _notify(ended))
    try:
        with ended:  # the refused one ends at once; no other ends while held
            assert ended.wait_for(lambda: sum(c.done() for c in calls) >= 1, 10)
            assert not ended.wait_for(lambda: sum(c.done() for c in calls) >= 2, 0.5)
        refused = [c for c in calls if c.done()]
        assert [c.code() for c in refused] == [grpc.StatusCode.UNAVAILABLE]
        assert "open streams" in refused[0].details()
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        assert publisher.publish(topic, b"still served").result(timeout=30)
        held = next(c for c in calls if not c.done())
        held.cancel()
        with ended:  # positive control: an end within that window is seen
            assert ended.wait_for(lambda: sum(c.done() for c in calls) >= 2, 10)
    finally:
        hold.set()
        for call in calls:
            call.cancel()


def _notify(condition: threading.Condition) -> None:
    with condition:
        condition.notify_all()


@pytest.mark.parametrize(("env", "says"), [
    ({"METRO_AUTH": "keys"}, "METRO_AUTH=keys needs METRO_ADMIN_KEY"),
    ({"METRO_MODE": "aws", "METRO_AUTH": "open", "METRO_ACK_SECRET": "s" * 40}, "METRO_AUTH=open is for the local"),
    ({"METRO_MODE": "aws", "METRO_SECRETS_SSM_PATH": "/metro-nowhere"}, "No secrets found under /metro-nowhere/"),
    ({"METRO_DIRECT_FANOUT": "maybe"}, "METRO_DIRECT_FANOUT must be one of"),
    ({"METRO_GRPC_WORKERS": "8", "METRO_GRPC_MAX_STREAMS": "8"}, "METRO_GRPC_MAX_STREAMS (8) must be above 0"),
])
def test_it_refuses_to_start_on_what_the_functions_refuse(edges: Any, env: dict[str, str], says: str) -> None:
    edge = edges(free_port(), **env)
    assert edge.process.wait(timeout=60) == 1
    log = edge.log.read_text()
    assert f"Metro cannot start: {says}" in log and "Traceback" not in log and LISTENING not in log
