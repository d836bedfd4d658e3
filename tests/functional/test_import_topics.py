"""Import topics (ingestionDataSourceSettings) on moto in-process: validation and state, Kinesis batches published
once (redelivered, or after a crash between publish and checkpoint), refused records as failure events, and S3
objects read once with matchGlob and minimumObjectCreateTime honoured."""

from __future__ import annotations

import base64
import io
import json
import logging
from typing import Any

import fastavro
import pytest

from chalicelib.api.parsing import topic_request, update_topic_request
from chalicelib.core import ingestion, live, names
from chalicelib.core.errors import InvalidArgument, PermissionDenied
from chalicelib.core.timefmt import format_timestamp_us
from chalicelib.core.wire.models import Subscription
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery import ingest
from chalicelib.delivery.fanout import FanOut
from chalicelib.local.ingest_pump import IngestPump
from chalicelib.runtime import Services
from chalicelib.service import storage_import
from chalicelib.service.publish import PublishService
from chalicelib.store import aws, call_record
from tests.functional.conftest import FakeClock, stream_event
from tests.functional.test_push_handler import sub, topic

STREAM = "orders"
BUCKET = "import-bucket"


def kinesis(services: Services) -> Any:
    return aws.client("kinesis", services.ctx.config)


def stream_arn(services: Services) -> str:
    return str(kinesis(services).describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamARN"])


def create_import(services: Services, settings: dict[str, Any]) -> Any:
    return services.admin.create_topic(topic(), topic_request({"ingestionDataSourceSettings": settings}, topic()))


@pytest.fixture
def stream(services: Services) -> str:
    kinesis(services).create_stream(StreamName=STREAM, ShardCount=1)
    return stream_arn(services)


@pytest.fixture
def kinesis_topic(services: Services, stream: str, clock: FakeClock) -> Services:
    create_import(services, {"awsKinesis": {"streamArn": stream},
                             "platformLogsSettings": {"severity": "WARNING"}})
    services.admin.create_subscription(sub(), Subscription(topic=topic().path))
    clock.advance(1)
    return services


def put(services: Services, *datas: bytes, key: str = "pk") -> None:
    for d in datas:
        kinesis(services).put_record(StreamName=STREAM, Data=d, PartitionKey=key)


def read_event(services: Services, stream: str) -> dict[str, Any]:
    """Every record of the stream, as Lambda's Kinesis event."""
    k = kinesis(services)
    shard = k.list_shards(StreamName=STREAM)["Shards"][0]["ShardId"]
    it = k.get_shard_iterator(StreamName=STREAM, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    return ingestion.kinesis_event(stream, shard, k.get_records(ShardIterator=it)["Records"], "us-east-1")


def handle(services: Services, event: dict[str, Any]) -> dict[str, Any]:
    with call_record.acting_as("ingest"):
        return ingest.IngestHandler(services.ctx).handle(event)


def delivered(services: Services) -> list[bytes]:
    """Fan out everything logged (once), then pull it all."""
    FanOut(services.ctx).handle(stream_event(services))
    got = services.pull.pull(sub(), PullRequest(max_messages=1000, return_immediately=True))
    return sorted(m.data for m in got.received)


# -- settings and state --------------------------------------------------------------------------------------------
def test_state_active_for_a_stream_and_not_found_for_a_missing_one(services: Services, stream: str) -> None:
    t = create_import(services, {"awsKinesis": {"streamArn": stream}})
    assert t.state == "ACTIVE"
    assert t.ingestion_data_source_settings.aws_kinesis.state == "ACTIVE"
    missing = stream.replace(STREAM, "gone")
    changed = services.admin.patch_topic(topic(), update_topic_request(
        {"topic": {"ingestionDataSourceSettings": {"awsKinesis": {"streamArn": missing}}},
         "updateMask": "ingestion_data_source_settings"}, topic()))
    assert changed.state == "INGESTION_RESOURCE_ERROR"
    assert changed.ingestion_data_source_settings.aws_kinesis.state == "STREAM_NOT_FOUND"
    assert services.admin.get_topic(topic()).to_wire()["ingestionDataSourceSettings"]["awsKinesis"]["state"] == \
        "STREAM_NOT_FOUND"


def test_consumer_not_found(services: Services, stream: str) -> None:
    t = create_import(services, {"awsKinesis": {"streamArn": stream, "consumerArn": f"{stream}/consumer/c:1"}})
    assert t.ingestion_data_source_settings.aws_kinesis.state == "CONSUMER_NOT_FOUND"


def test_bucket_states(services: Services) -> None:
    aws.client("s3", services.ctx.config).create_bucket(Bucket=BUCKET)
    assert create_import(services, {"cloudStorage": {"bucket": BUCKET, "textFormat": {}}}).state == "ACTIVE"
    services.admin.delete_topic(topic())
    t = create_import(services, {"cloudStorage": {"bucket": "no-such-bucket", "textFormat": {}}})
    assert t.ingestion_data_source_settings.cloud_storage.state == "BUCKET_NOT_FOUND"


@pytest.mark.parametrize("settings, why", [
    ({"azureEventHubs": {"namespace": "n"}}, "no AWS counterpart"),
    ({"confluentCloud": {"bootstrapServer": "b"}}, "no AWS counterpart"),
    ({"awsKinesis": {"streamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/a"},
      "cloudStorage": {"bucket": "b", "textFormat": {}}}, "at most one"),
    ({"awsKinesis": {"streamArn": "not-an-arn"}}, "not a Kinesis stream ARN"),
    ({"cloudStorage": {"bucket": "b"}}, "exactly one of textFormat"),
    ({"cloudStorage": {"bucket": "b", "textFormat": {}, "matchGlob": "a/{b"}}, "unclosed"),
])
def test_refused_settings(services: Services, settings: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidArgument, match=why):
        create_import(services, settings)


def test_deployed_tenancy_allows_only_listed_sources(services: Services, stream: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses
    services.ctx.config = dataclasses.replace(services.ctx.config, deployed=True, ingestion_sources=())
    with pytest.raises(PermissionDenied, match="METRO_INGESTION_SOURCES"):
        create_import(services, {"awsKinesis": {"streamArn": stream}})


# -- Kinesis ---------------------------------------------------------------------------------------------------------
def test_imported_messages_count_in_the_live_counters_with_the_ingest_role(kinesis_topic: Services, stream: str,
                                                                          clock: FakeClock) -> None:
    """An import publishes like any publisher: its tally flushes into the resources table, with the ingest
    function's role when the flush interval has passed during its batch (infra/policies.py grants it)."""
    put(kinesis_topic, b"a")
    assert handle(kinesis_topic, read_event(kinesis_topic, stream))["published"] == 1
    clock.advance(kinesis_topic.ctx.config.counter_flush_seconds + 1)
    put(kinesis_topic, b"b")
    assert handle(kinesis_topic, read_event(kinesis_topic, stream))["published"] == 1  # its tally flushes now
    assert kinesis_topic.ctx.counters.read(topic())[live.PUBLISHED] == 2


def test_every_record_once_when_a_batch_comes_twice(kinesis_topic: Services, stream: str) -> None:
    put(kinesis_topic, b"a", b"b", b"c")
    event = read_event(kinesis_topic, stream)
    assert handle(kinesis_topic, event)["published"] == 3
    assert handle(kinesis_topic, event)["published"] == 0  # a Lambda retry of the same batch
    put(kinesis_topic, b"d")
    assert handle(kinesis_topic, read_event(kinesis_topic, stream))["published"] == 1  # a, b, c skipped
    assert delivered(kinesis_topic) == [b"a", b"b", b"c", b"d"]


def test_a_crash_between_publish_and_checkpoint_publishes_nothing_twice(kinesis_topic: Services, stream: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    put(kinesis_topic, b"x", b"y")
    event = read_event(kinesis_topic, stream)
    store = kinesis_topic.ctx.ingestion

    def crash(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("the function died here")

    with monkeypatch.context() as m:
        m.setattr(store, "commit", crash)
        with pytest.raises(RuntimeError):
            handle(kinesis_topic, event)
    published = []
    original = PublishService.publish
    monkeypatch.setattr(PublishService, "publish", lambda self, *a, **k: published.append(a) or original(self, *a, **k))
    handle(kinesis_topic, event)
    assert published == []  # the run found its batch in the log and only moved the checkpoint
    assert delivered(kinesis_topic) == [b"x", b"y"]
    assert store.checkpoint(topic().path, stream, event["Records"][0]["eventID"].split(":")[0]).pending_rid == ""


def test_a_crash_inside_publish_republishes_under_the_same_ids(kinesis_topic: Services, stream: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    put(kinesis_topic, b"p", b"q")
    event = read_event(kinesis_topic, stream)
    with monkeypatch.context() as m:
        m.setattr(kinesis_topic.ctx.log, "append", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("died")))
        with pytest.raises(RuntimeError):
            handle(kinesis_topic, event)
    assert handle(kinesis_topic, event)["published"] == 2
    assert delivered(kinesis_topic) == [b"p", b"q"]


def test_a_refused_record_is_a_failure_event_and_the_rest_is_published(kinesis_topic: Services, stream: str,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    put(kinesis_topic, b"ok-1", b"", b"ok-2")  # an empty record: Google's API violation
    with caplog.at_level(logging.WARNING, logger="metro"):
        result = handle(kinesis_topic, read_event(kinesis_topic, stream))
    assert (result["published"], result["failed"]) == (2, 1)
    events = [r for r in caplog.records if r.getMessage().startswith("IngestionFailureEvent")]
    assert len(events) == 1
    event = json.loads(events[0].getMessage().split(" ", 1)[1])
    assert event["topic"] == topic().path
    assert event["aws_kinesis_failure"]["stream_arn"] == stream
    assert event["aws_kinesis_failure"]["partition_key"] == "pk"
    assert "api_violation_reason" in event["aws_kinesis_failure"]
    assert delivered(kinesis_topic) == [b"ok-1", b"ok-2"]


def test_a_schema_refusal_of_one_record_publishes_the_others(kinesis_topic: Services, stream: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    original = PublishService.publish

    def strict(self: PublishService, name: Any, request: Any, request_id: str | None = None) -> Any:
        if any(m.data == b"bad" for m in request.messages):
            raise InvalidArgument("Request had invalid data: the message does not conform to the schema")
        return original(self, name, request, request_id)

    monkeypatch.setattr(PublishService, "publish", strict)
    put(kinesis_topic, b"good", b"bad", b"fine")
    result = handle(kinesis_topic, read_event(kinesis_topic, stream))
    assert (result["published"], result["failed"]) == (2, 1)
    assert delivered(kinesis_topic) == [b"fine", b"good"]


def test_no_failure_event_without_platform_logs(services: Services, stream: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    create_import(services, {"awsKinesis": {"streamArn": stream}})
    put(services, b"")
    with caplog.at_level(logging.WARNING, logger="metro"):
        assert handle(services, read_event(services, stream))["failed"] == 1
    assert not [r for r in caplog.records if r.getMessage().startswith("IngestionFailureEvent")]


def test_the_local_pump_reads_each_record_once_across_restarts(kinesis_topic: Services, stream: str) -> None:
    put(kinesis_topic, b"1", b"2")
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return handle(kinesis_topic, event)

    pump = IngestPump(kinesis_topic.ctx.config, handler)
    assert pump.poll_once() == 2
    assert pump.poll_once() == 0
    put(kinesis_topic, b"3")
    assert IngestPump(kinesis_topic.ctx.config, handler).poll_once() == 1  # starts after the checkpoint
    assert delivered(kinesis_topic) == [b"1", b"2", b"3"]


# -- Cloud Storage onto S3 ---------------------------------------------------------------------------------------
def avro_file(records: list[dict[str, Any]], schema: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    return out.getvalue()


@pytest.fixture
def bucket(services: Services) -> Any:
    s3 = aws.client("s3", services.ctx.config)
    s3.create_bucket(Bucket=BUCKET)
    storage_import._DONE.clear()
    return s3


def scan(services: Services) -> storage_import.ScanResult:
    with call_record.acting_as("maintenance"):
        return storage_import.scan_all(services.ctx)


def test_text_objects_are_read_once_and_the_glob_is_honoured(services: Services, bucket: Any) -> None:
    create_import(services, {"cloudStorage": {"bucket": BUCKET, "textFormat": {}, "matchGlob": "in/**.txt"}})
    services.admin.create_subscription(sub(), Subscription(topic=topic().path))
    bucket.put_object(Bucket=BUCKET, Key="in/a.txt", Body=b"one\ntwo\n")
    bucket.put_object(Bucket=BUCKET, Key="in/deep/b.txt", Body=b"three")
    bucket.put_object(Bucket=BUCKET, Key="in/c.csv", Body=b"skipped")
    assert scan(services).published == 3
    storage_import._DONE.clear()  # a new process: the checkpoints alone say what was read
    assert scan(services).published == 0
    assert delivered(services) == [b"one", b"three", b"two"]


def test_minimum_object_create_time_skips_older_objects(services: Services, bucket: Any, clock: FakeClock) -> None:
    bucket.put_object(Bucket=BUCKET, Key="old.txt", Body=b"old")
    later = format_timestamp_us(clock() + 3600 * 24 * 365 * 50)  # after every object moto stamps now
    create_import(services, {"cloudStorage": {"bucket": BUCKET, "textFormat": {"delimiter": ","},
                                              "minimumObjectCreateTime": later}})
    assert scan(services).objects == 0


def test_avro_and_pubsub_avro_objects(services: Services, bucket: Any) -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}
    create_import(services, {"cloudStorage": {"bucket": BUCKET, "avroFormat": {}}})
    services.admin.create_subscription(sub(), Subscription(topic=topic().path))
    bucket.put_object(Bucket=BUCKET, Key="r.avro", Body=avro_file([{"n": 1}, {"n": 2}], schema))
    assert scan(services).published == 2
    got = delivered(services)
    assert sorted(fastavro.schemaless_reader(io.BytesIO(d), fastavro.parse_schema(schema))["n"] for d in got) == [1, 2]


def test_a_record_the_topic_schema_refuses_is_a_schema_failure(services: Services, stream: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    from chalicelib.core.schemas.model import SchemaSpec, SchemaType

    schema = names.make(topic().project, "schemas", "orders")
    services.schemas.create(schema, SchemaSpec(SchemaType.AVRO, json.dumps(
        {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})))
    services.admin.create_topic(topic(), topic_request({
        "schemaSettings": {"schema": schema.path, "encoding": "JSON"},
        "ingestionDataSourceSettings": {"awsKinesis": {"streamArn": stream},
                                        "platformLogsSettings": {"severity": "INFO"}}}, topic()))
    services.admin.create_subscription(sub(), Subscription(topic=topic().path))
    put(services, b'{"id": "a"}', b'{"id": 7}', b'{"id": "b"}')
    with caplog.at_level(logging.WARNING, logger="metro"):
        result = handle(services, read_event(services, stream))
    assert (result["published"], result["failed"]) == (2, 1)
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("IngestionFailureEvent")]
    failure = json.loads(line.split(" ", 1)[1])["aws_kinesis_failure"]
    assert "schema_violation_reason" in failure and failure["sequence_number"]
    assert delivered(services) == [b'{"id": "a"}', b'{"id": "b"}']


def test_msk_batches_publish_once(services: Services) -> None:
    cluster = "arn:aws:kafka:us-east-1:123456789012:cluster/demo/abcd-1234-5"
    t = create_import(services, {"awsMsk": {"clusterArn": cluster, "topic": "orders"}})
    assert t.state == "INGESTION_RESOURCE_ERROR"  # no broker here: CLUSTER_NOT_FOUND, yet the batch shape works
    services.admin.create_subscription(sub(), Subscription(topic=topic().path))
    value = base64.b64encode(b"kafka-value").decode()
    event = {"eventSource": "aws:kafka", "eventSourceArn": cluster, "records": {"orders-0": [
        {"topic": "orders", "partition": 0, "offset": n, "timestamp": 0, "timestampType": "CREATE_TIME",
         "key": base64.b64encode(b"k").decode(), "value": value, "headers": [{"h": [118]}]} for n in (5, 6)]}}
    assert handle(services, event)["published"] == 2
    assert handle(services, event)["published"] == 0  # the mapping's retry of the same batch
    FanOut(services.ctx).handle(stream_event(services))
    got = services.pull.pull(sub(), PullRequest(max_messages=10, return_immediately=True)).received
    assert [(m.data, m.attributes, m.ordering_key) for m in got] == [(b"kafka-value", {"h": "v"}, "k")] * 2


def test_a_scan_that_died_after_publishing_an_object_publishes_it_once(services: Services, bucket: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    create_import(services, {"cloudStorage": {"bucket": BUCKET, "textFormat": {}}})
    services.admin.create_subscription(sub(), Subscription(topic=topic().path))
    bucket.put_object(Bucket=BUCKET, Key="in/once.txt", Body=b"l1\nl2\n")
    bucket.put_object(Bucket=BUCKET, Key="in/empty.txt", Body=b"")
    with monkeypatch.context() as m:
        m.setattr(services.ctx.ingestion, "commit", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("died")))
        with pytest.raises(RuntimeError):
            scan(services)
    storage_import._DONE.clear()
    scan(services)
    assert delivered(services) == [b"l1", b"l2"]
