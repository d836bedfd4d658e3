"""Export subscriptions (cloudStorageConfig) on moto in-process: files in S3, acks after the write, redelivery,
dead-lettering, the subscription's state, the local pump's batching and no loss under injected S3 faults."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import random
from typing import Any

import fastavro
import pytest

from chalicelib.api.parsing import publish_request, subscription_request, update_subscription_request
from chalicelib.core import names
from chalicelib.core.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from chalicelib.core.schemas.model import SchemaSpec, SchemaType
from chalicelib.core.wire.models import SchemaSettings, Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery.export import ExportDelivery
from chalicelib.delivery.fanout import FanOut
from chalicelib.local.export_pump import ExportPump
from chalicelib.local.faults import FaultInjector
from chalicelib.runtime import Services
from chalicelib.store import aws, call_record
from tests.functional.conftest import FakeClock, stream_event
from tests.functional.test_push_handler import msg, publish, sqs_event, sub, topic

BUCKET = "export-bucket"


def s3(services: Services) -> Any:
    return aws.client("s3", services.ctx.config)


def objects(services: Services) -> dict[str, bytes]:
    client = s3(services)
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    return {k: client.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in keys}


def export(services: Services, event: dict[str, Any]) -> dict[str, Any]:
    with call_record.acting_as("export"):
        return ExportDelivery(services.ctx).handle(event)


def queue_counts(services: Services) -> tuple[int, int]:
    url = services.ctx.resources.require_subscription(sub()).queue_url
    a = aws.client("sqs", services.ctx.config).get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


def create(services: Services, **config: Any) -> None:
    services.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "cloudStorageConfig": {"bucket": BUCKET, **config}}, sub()))


@pytest.fixture
def ready(services: Services, clock: FakeClock) -> Services:
    s3(services).create_bucket(Bucket=BUCKET)
    services.admin.create_topic(topic(), Topic())
    clock.advance(1)
    return services


def test_a_batch_is_one_text_file_and_acked_after_it(ready: Services) -> None:
    create(ready, filenamePrefix="events/", filenameSuffix=".txt")
    spec = ready.admin.get_subscription(sub()).spec.reported()
    assert spec.cloud_storage_config is not None and spec.cloud_storage_config.state == "ACTIVE"
    assert spec.cloud_storage_config.text_config is not None  # text when no format is named
    publish(ready, msg(b"one"), msg(b"two"), msg(b"three"))
    assert export(ready, sqs_event(ready)) == {"batchItemFailures": []}
    files = objects(ready)
    assert len(files) == 1
    key, body = next(iter(files.items()))
    assert key.startswith("events/") and key.endswith(".txt") and "+00:00_" in key
    assert sorted(body.split(b"\n")) == [b"one", b"three", b"two"]
    assert queue_counts(ready) == (0, 0)  # deleted after the write


def test_avro_with_metadata(ready: Services) -> None:
    create(ready, avroConfig={"writeMetadata": True})
    ids = publish(ready, msg(b"\x00bin", attributes={"k": "v"}))
    export(ready, sqs_event(ready))
    (body,) = objects(ready).values()
    reader = fastavro.reader(io.BytesIO(body))
    (record,) = list(reader)
    assert record["message_id"] == ids[0] and record["data"] == b"\x00bin" and record["attributes"] == {"k": "v"}
    assert record["subscription_name"] == sub().path


def test_create_checks_the_config_and_the_bucket(ready: Services) -> None:
    with pytest.raises(FailedPrecondition):
        services_create = subscription_request({"topic": topic().path,
                                                "cloudStorageConfig": {"bucket": "no-such-bucket"}}, sub())
        ready.admin.create_subscription(sub(), services_create)
    with pytest.raises(InvalidArgument):
        create(ready, maxDuration="30s")
    with pytest.raises(InvalidArgument):
        ready.admin.create_subscription(sub(), subscription_request(
            {"topic": topic().path, "cloudStorageConfig": {"bucket": BUCKET},
             "pushConfig": {"pushEndpoint": "http://127.0.0.1:9/hook"}}, sub()))
    with pytest.raises(PermissionDenied):
        create(ready, serviceAccountEmail="writer@example.com")  # not mapped to a role
    assert ready.ctx.resources.get_subscription(sub()) is None


def test_a_pull_subscription_becomes_an_export_one(ready: Services) -> None:
    ready.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    ready.admin.patch_subscription(sub(), update_subscription_request({"subscription": {
        "cloudStorageConfig": {"bucket": BUCKET, "avroConfig": {}}}, "updateMask": "cloudStorageConfig"}, sub()))
    publish(ready, msg(b"x"))
    export(ready, sqs_event(ready))
    assert len(objects(ready)) == 1


def test_a_failed_write_redelivers_and_nothing_is_written(ready: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    create(ready)
    publish(ready, msg(b"a"), msg(b"b"))

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("S3 is down")

    monkeypatch.setattr(ready.ctx.exports, "put", broken)
    event = sqs_event(ready)
    result = export(ready, event)
    assert {f["itemIdentifier"] for f in result["batchItemFailures"]} == {r["messageId"] for r in event["Records"]}
    assert objects(ready) == {}
    monkeypatch.undo()
    again = sqs_event(ready)  # visible again at once (no retry policy: no backoff)
    assert len(again["Records"]) == 2
    assert export(ready, again) == {"batchItemFailures": []}
    assert sorted(next(iter(objects(ready).values())).split(b"\n")) == [b"a", b"b"]


def test_dead_letter_after_max_delivery_attempts(ready: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = names.make(topic().project, "topics", "dead")
    ready.admin.create_topic(dead, Topic())
    dead_sub = names.make(topic().project, "subscriptions", "dead-sub")
    ready.admin.create_subscription(dead_sub, subscription_request({"topic": dead.path}, dead_sub))
    ready.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "cloudStorageConfig": {"bucket": BUCKET},
         "deadLetterPolicy": {"deadLetterTopic": dead.path, "maxDeliveryAttempts": 5}}, sub()))
    publish(ready, msg(b"doomed"))
    monkeypatch.setattr(ready.ctx.exports, "put", lambda *a, **k: "PERMISSION_DENIED")
    for _ in range(5):
        export(ready, sqs_event(ready))
    assert queue_counts(ready) == (0, 0)  # forwarded at its last attempt
    state = ready.admin.get_subscription(sub()).spec.cloud_storage_config
    assert state is not None and state.state == "PERMISSION_DENIED"
    FanOut(ready.ctx).handle(stream_event(ready))  # the forwarded message's log item reaches the dead topic's queue
    pulled = ready.pull.pull(dead_sub, PullRequest(max_messages=10))
    assert [m.data for m in pulled.received] == [b"doomed"]


def test_state_not_found_when_the_bucket_goes_and_active_when_it_is_back(ready: Services) -> None:
    create(ready)
    publish(ready, msg(b"a"))
    s3(ready).delete_bucket(Bucket=BUCKET)
    result = export(ready, sqs_event(ready))
    assert len(result["batchItemFailures"]) == 1
    got = ready.admin.get_subscription(sub()).spec.reported().cloud_storage_config
    assert got is not None and got.state == "NOT_FOUND"
    s3(ready).create_bucket(Bucket=BUCKET)
    assert export(ready, sqs_event(ready)) == {"batchItemFailures": []}
    got = ready.admin.get_subscription(sub()).spec.cloud_storage_config
    assert got is not None and got.state == "ACTIVE"


def pump(services: Services, clock: FakeClock) -> ExportPump:
    p = ExportPump(services.ctx.config, lambda event, context: export(services, event), clock=clock)
    p.refresh_once(start=False)
    return p


def test_the_local_pump_batches_until_max_duration(ready: Services, clock: FakeClock) -> None:
    create(ready, maxDuration="60s")
    p = pump(ready, clock)
    (poller,) = p.pollers.values()
    publish(ready, *[msg(f"m{i}".encode()) for i in range(25)])
    handed = sum(poller.poll_once(wait=0) for _ in range(4))  # 25 received, not due yet
    assert handed == 0 and objects(ready) == {}
    clock.advance(60)
    assert poller.poll_once(wait=0) == 25
    (body,) = objects(ready).values()
    assert len(body.split(b"\n")) == 25


def test_the_local_pump_writes_when_max_bytes_is_reached(ready: Services, clock: FakeClock) -> None:
    create(ready, maxMessages=1000, maxBytes=1000)  # 1000 bytes: 100 messages of 10 bytes
    p = pump(ready, clock)
    (poller,) = p.pollers.values()
    publish(ready, *[msg(b"0123456789") for _ in range(150)])
    handed = sum(poller.poll_once(wait=0) for _ in range(20))
    assert handed > 0  # maxBytes (counted by queue body) made the batch due before maxDuration
    assert all(len(body) <= 1000 for body in objects(ready).values())


class NoLostAnswers(random.Random):
    """The fault run's draws, less ``timeout_after`` (it would send the request to a real endpoint: moto here runs
    in-process); the other kinds all happen."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.pick = False

    def random(self) -> float:
        value = super().random()
        self.pick = not self.pick
        return value if self.pick else value * 0.74


def test_no_loss_under_injected_s3_faults(ready: Services, clock: FakeClock) -> None:
    create(ready, maxDuration="60s")
    ids: list[str] = []
    for i in range(6):
        ids += publish(ready, *[msg(f"{i}-{j}".encode()) for j in range(20)])
    client = aws.s3(ready.ctx.config)
    injector = FaultInjector(0.8, NoLostAnswers(7))
    client.meta.events.register("before-send.s3.PutObject", injector, unique_id="export-faults")
    try:
        p = pump(ready, clock)
        (poller,) = p.pollers.values()
        for _ in range(200):
            poller.poll_once(wait=0)
            clock.advance(30)
            if queue_counts(ready) == (0, 0) and not poller.pending.messages:
                break
    finally:
        client.meta.events.unregister("before-send.s3.PutObject", unique_id="export-faults")
    assert sum(injector.counts.values()) > 0
    lines = [line for body in objects(ready).values() for line in body.split(b"\n")]
    expected = {f"{i}-{j}".encode() for i in range(6) for j in range(20)}
    assert set(lines) == expected  # none lost
    print(f"faults {dict(injector.counts)}; {len(lines)} lines for {len(expected)} messages, "
          f"{len(lines) - len(set(lines))} duplicates, {len(objects(ready))} files")


def test_a_large_message_past_its_attempts_goes_to_the_dead_letter_topic_directly(
        ready: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = dataclasses.replace(ready.ctx, config=dataclasses.replace(ready.ctx.config, direct_fanout=True,
                                                                      inline_max_bytes=0))
    services = Services.build(ctx)
    dead = names.make(topic().project, "topics", "dead")
    services.admin.create_topic(dead, Topic())
    dead_sub = names.make(topic().project, "subscriptions", "dead-sub")
    services.admin.create_subscription(dead_sub, subscription_request({"topic": dead.path}, dead_sub))
    services.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "cloudStorageConfig": {"bucket": BUCKET},
         "deadLetterPolicy": {"deadLetterTopic": dead.path, "maxDeliveryAttempts": 5}}, sub()))
    big = b"x" * (8 * 1024)  # above the log's inline limit: the forward writes a raw object
    publish(services, msg(big))
    monkeypatch.setattr(ctx.exports, "put", lambda *a, **k: "NOT_FOUND")
    for _ in range(5):
        with call_record.acting_as("export"):
            ExportDelivery(ctx).handle(sqs_event(services))
    pulled = services.pull.pull(dead_sub, PullRequest(max_messages=10))  # fanned out by the forward itself
    assert [m.data for m in pulled.received] == [big]


def test_a_body_stored_nowhere_waits_and_is_not_written(ready: Services) -> None:
    ctx = dataclasses.replace(ready.ctx, config=dataclasses.replace(ready.ctx.config, inline_max_bytes=0))
    services = Services.build(ctx)
    create(services)
    publish(services, msg(b"gone"))
    bucket = ctx.config.bucket
    for o in s3(services).list_objects_v2(Bucket=bucket).get("Contents", []):  # compaction deleted it, no archive
        if o["Key"].startswith("raw/"):
            s3(services).delete_object(Bucket=bucket, Key=o["Key"])
    with call_record.acting_as("export"):
        result = ExportDelivery(ctx).handle(sqs_event(services))
    assert len(result["batchItemFailures"]) == 1 and objects(services) == {}


def test_switched_away_from_export_hands_the_batch_back(ready: Services) -> None:
    dead = names.make(topic().project, "topics", "dead")
    ready.admin.create_topic(dead, Topic())
    ready.admin.create_subscription(sub(), subscription_request(
        {"topic": topic().path, "cloudStorageConfig": {"bucket": BUCKET},
         "deadLetterPolicy": {"deadLetterTopic": dead.path, "maxDeliveryAttempts": 5}}, sub()))
    publish(ready, msg(b"a"))
    event = sqs_event(ready)
    ready.admin.patch_subscription(sub(), update_subscription_request({"subscription": {},
                                                                      "updateMask": "cloudStorageConfig"}, sub()))
    with call_record.acting_as("export"):
        result = ExportDelivery(ready.ctx).handle(event)  # a warm handler's cache is 2 s old at most: a new one
    assert len(result["batchItemFailures"]) == 1 and objects(ready) == {}
    pulled = ready.pull.pull(sub(), PullRequest(max_messages=10))
    assert [m.data for m in pulled.received] == [b"a"]
    assert pulled.received[0].delivery_attempt == 1  # the export's receive did not count as a delivery


def test_an_export_subscription_cannot_be_pulled(ready: Services) -> None:
    create(ready)
    publish(ready, msg(b"a"))
    with pytest.raises(FailedPrecondition):
        ready.pull.pull(sub(), PullRequest(max_messages=10))
    assert queue_counts(ready) == (1, 0)  # left for the writer


ORDER = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"},
                                                                 {"name": "qty", "type": "int"}]})


@pytest.mark.parametrize("metadata", [False, True])
def test_use_topic_schema_writes_the_topics_records(ready: Services, metadata: bool) -> None:
    schema = names.make(topic().project, "schemas", "orders")
    ready.schemas.create(schema, SchemaSpec(SchemaType.AVRO, ORDER))
    orders = names.make(topic().project, "topics", "orders")
    ready.admin.create_topic(orders, Topic(schema_settings=SchemaSettings(schema=schema.path, encoding="JSON")))
    ready.admin.create_subscription(sub(), subscription_request(
        {"topic": orders.path, "cloudStorageConfig": {
            "bucket": BUCKET, "avroConfig": {"useTopicSchema": True, "writeMetadata": metadata}}}, sub()))
    docs = [{"id": "a", "qty": 1}, {"id": "b", "qty": 2}]
    ready.publish.publish(orders, publish_request({"messages": [
        {"data": base64.b64encode(json.dumps(d).encode()).decode()} for d in docs]}))
    FanOut(ready.ctx).handle(stream_event(ready))
    assert export(ready, sqs_event(ready)) == {"batchItemFailures": []}
    (body,) = objects(ready).values()
    reader = fastavro.reader(io.BytesIO(body))
    records = list(reader)
    assert reader.writer_schema is not None
    if metadata:
        assert reader.writer_schema["name"] == "PubsubMessageWithMetadata"
        assert sorted((r["data"]["id"], r["data"]["qty"]) for r in records) == [("a", 1), ("b", 2)]
    else:
        assert reader.writer_schema["name"] == "Order"
        assert sorted((r["id"], r["qty"]) for r in records) == [("a", 1), ("b", 2)]


def test_a_write_whose_answer_was_lost_is_overwritten_not_duplicated(ready: Services,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    create(ready)
    publish(ready, msg(b"a"), msg(b"b"))
    real = ready.ctx.exports.put

    def served_then_lost(*args: Any, **kwargs: Any) -> str:
        real(*args, **kwargs)  # S3 wrote it; the answer never came back
        raise TimeoutError("read timeout")

    monkeypatch.setattr(ready.ctx.exports, "put", served_then_lost)
    assert len(export(ready, sqs_event(ready))["batchItemFailures"]) == 2
    monkeypatch.undo()
    assert export(ready, sqs_event(ready)) == {"batchItemFailures": []}
    files = objects(ready)
    assert len(files) == 1  # the retried batch had the same name: one file, each message once
    assert sorted(next(iter(files.values())).split(b"\n")) == [b"a", b"b"]
