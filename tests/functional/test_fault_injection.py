"""Injected AWS faults (chalicelib/local/faults.py) against a real moto server, and the writes they found
unsafe to retry: an exactly-once transition whose answer was lost must still count as done."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.config import Config as BotoConfig
from botocore.exceptions import ClientError, ReadTimeoutError

from chalicelib.config import Config
from chalicelib.local.bootstrap import bootstrap
from chalicelib.local.faults import FaultInjector
from chalicelib.store import aws
from chalicelib.store.leases import ExactLeases
from chalicelib.store.workers import Workers

NOW = 1_800_000_000.0
FAULT = {"throttle": 0.0, "server_error": 0.3, "timeout_before": 0.6, "timeout_after": 0.9}


class Scripted(random.Random):
    """Draws that fault the first attempt with ``kind``, then never again."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.draws = [0.0, FAULT[kind]]

    def random(self) -> float:
        return self.draws.pop(0) if self.draws else 0.99


@pytest.fixture(scope="module")
def config() -> Iterator[Config]:
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    aws.reset_clients()
    try:
        cfg = Config()
        bootstrap(cfg)
        yield cfg
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        aws.reset_clients()


def faulted(client: Any, operation: str, kind: str) -> FaultInjector:
    """Fault the next attempt of ``operation`` on ``client`` with ``kind`` (remove with :func:`unfault`)."""
    injector = FaultInjector(0.5, Scripted(kind))
    client.meta.events.register(f"before-send.{client.meta.service_model.service_id.hyphenize()}.{operation}",
                                injector, unique_id="test-fault")
    return injector


def unfault(client: Any) -> None:
    client.meta.events.unregister("before-send", unique_id="test-fault")


@pytest.mark.parametrize("kind", ["timeout_after", "server_error", "timeout_before"])
def test_exactly_once_ack_succeeds_when_an_attempt_fails(config: Config, kind: str) -> None:
    leases, ddb = ExactLeases(config, Workers()), aws.dynamodb(config)
    sub = f"projects/p/subscriptions/ack-{kind}"
    assert leases.claim(sub, "m1", "tok", NOW + 10, NOW, int(NOW + 86400)) == "ok"
    injector = faulted(ddb, "UpdateItem", kind)
    try:
        assert leases.ack(sub, "m1", "tok", NOW + 1)  # the first attempt fails; botocore's retry answers
    finally:
        unfault(ddb)
    assert injector.counts == {kind: 1}
    assert not leases.ack(sub, "m1", "tok", NOW + 2)  # a second acknowledge of the same id still fails
    assert leases.claim(sub, "m1", "tok2", NOW + 20, NOW + 3, int(NOW + 86400)) == "acked"


def test_exactly_once_claim_whose_answer_was_lost_is_held_by_its_puller(config: Config) -> None:
    leases, ddb = ExactLeases(config, Workers()), aws.dynamodb(config)
    sub = "projects/p/subscriptions/claim-lost"
    faulted(ddb, "UpdateItem", "timeout_after")
    try:
        assert leases.claim(sub, "m1", "tok", NOW + 10, NOW, int(NOW + 86400)) == "ok"
    finally:
        unfault(ddb)
    assert leases.claim(sub, "m1", "other", NOW + 10, NOW + 1, int(NOW + 86400)) == "held"
    assert leases.ack(sub, "m1", "tok", NOW + 2)


@pytest.mark.parametrize(("service", "kind", "code"), [
    ("dynamodb", "throttle", "ThrottlingException"), ("dynamodb", "server_error", "InternalFailure"),
    ("s3", "throttle", "SlowDown"), ("s3", "server_error", "InternalError"),
])
def test_injected_errors_parse_as_the_services_errors(config: Config, service: str, kind: str, code: str) -> None:
    import boto3

    client = boto3.client(service, endpoint_url=config.endpoint_url, region_name=config.region,
                          config=BotoConfig(retries={"mode": "standard", "total_max_attempts": 1}))
    faulted(client, "ListTables" if service == "dynamodb" else "ListBuckets", kind)
    with pytest.raises(ClientError) as caught:
        client.list_tables() if service == "dynamodb" else client.list_buckets()
    assert caught.value.response["Error"]["Code"] == code


def test_injected_timeout_raises_a_read_timeout(config: Config) -> None:
    import boto3

    client = boto3.client("sqs", endpoint_url=config.endpoint_url, region_name=config.region,
                          config=BotoConfig(retries={"mode": "standard", "total_max_attempts": 1}))
    faulted(client, "CreateQueue", "timeout_after")
    with pytest.raises(ReadTimeoutError):
        client.create_queue(QueueName="made-although-timed-out")
    assert any(u.endswith("/made-although-timed-out") for u in client.list_queues().get("QueueUrls", []))


def test_lease_writes_of_one_pull_run_concurrently(config: Config) -> None:
    """A pull's lease writes overlap (one after another, 100 of them outlasted clients' timeouts under load)."""
    import threading
    import time

    leases, ddb = ExactLeases(config, Workers()), aws.dynamodb(config)
    sub, flying, most = "projects/p/subscriptions/concurrent", [0], [0]
    lock = threading.Lock()

    def slow(**_: Any) -> None:  # each write holds its slot a little, so that overlapping ones are seen
        with lock:
            flying[0] += 1
            most[0] = max(most[0], flying[0])
        time.sleep(0.02)
        with lock:
            flying[0] -= 1

    ddb.meta.events.register("before-send.dynamodb.UpdateItem", slow, unique_id="test-fault")
    try:
        states = leases.each(lambda m: leases.claim(sub, m, "tok", NOW + 10, NOW, int(NOW + 86400)),
                             [f"m{i}" for i in range(10)])
    finally:
        unfault(ddb)
    assert states == ["ok"] * 10
    assert most[0] > 1


def test_create_subscription_whose_answer_was_lost_keeps_its_queue(config: Config) -> None:
    """The transaction lands, its answer is lost, botocore's retry fails its condition: the subscription must
    still be created with its queue (it was deleted, leaving a subscription that could never deliver)."""
    from chalicelib.core import names
    from chalicelib.core.wire.models import Subscription, Topic
    from chalicelib.runtime import Services
    from chalicelib.service.context import Context

    built = Services.build(Context.from_config(config, clock=lambda: NOW))
    topic, sub = names.make("p", "topics", "lost-answer"), names.make("p", "subscriptions", "lost-answer")
    built.admin.create_topic(topic, Topic())
    ddb = aws.dynamodb(config)
    injector = faulted(ddb, "TransactWriteItems", "timeout_after")
    try:
        rec = built.admin.create_subscription(sub, Subscription(topic=topic.path))
    finally:
        unfault(ddb)
    assert injector.counts == {"timeout_after": 1}
    assert any(url == rec.queue_url for url in aws.sqs(config).list_queues().get("QueueUrls", []))
