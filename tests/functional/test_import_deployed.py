"""Import topics' AWS calls that only a deployed Metro makes, through each function's entry point on moto, so that the
IAM gate of ``make test`` (infra/iam_gate.py) measures them under the function that makes them: the API's source
checks (a stream, its consumer, a bucket, with an assumed role) and its management of the ingest function's Kinesis
event source mapping (created, deleted with the last topic reading the stream), the ingest function's publish of a
batch (S3 body, direct fan-out), the local pump's reads as the mapping's, and maintenance's bucket scan.

Lambda runs no code here (moto's Lambda without Docker answers every invocation itself)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import runtime
from chalicelib.config import Config
from chalicelib.core import ingestion, names
from chalicelib.core.records import TopicRecord
from chalicelib.core.wire.requests import PullRequest
from chalicelib.core.wire.transforms import JavaScriptUdf, MessageTransform
from chalicelib.delivery import event_handlers
from chalicelib.local.ingest_pump import IngestPump
from chalicelib.service import storage_import
from chalicelib.store import aws
from tests.functional.app_client import process_environment
from tests.functional.test_deployed_paths import ENV, Api, _function, _stage

P = "iam-paths"
INGEST = "metro-dev-ingest"
STREAM, BUCKET = "metro-dev-import-orders", "metro-dev-import-files"
ROLE = "arn:aws:iam::123456789012:role/metro-dev-import-reader"
IMPORT_ENV = {**ENV, "METRO_INGEST_FUNCTION": INGEST, "METRO_DIRECT_FANOUT": "1",
              "METRO_INGESTION_SOURCES": "arn:*:kinesis:*:*:stream/metro-dev-import-*,metro-dev-import-*",
              "METRO_INGESTION_ROLES": "arn:*:iam::*:role/metro-dev-import-*"}


@pytest.fixture
def stage() -> Iterator[dict[str, str]]:
    with process_environment(IMPORT_ENV, also_saved=("METRO_SEEK_LEASE_SECONDS",)), \
            mock_aws(config={"lambda": {"use_docker": False}}):
        _stage()
        config = Config()
        iam = aws.client("iam", config)
        _function(INGEST, iam.get_role(RoleName="metro-iam-test")["Role"]["Arn"])
        iam.create_role(RoleName="metro-dev-import-reader", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"AWS": "*"}}]}))
        kinesis = aws.client("kinesis", config)
        kinesis.create_stream(StreamName=STREAM, ShardCount=1)
        arn = kinesis.describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamARN"]
        consumer = kinesis.register_stream_consumer(StreamARN=arn, ConsumerName="metro")["Consumer"]["ConsumerARN"]
        aws.client("s3", config).create_bucket(Bucket=BUCKET)
        storage_import._DONE.clear()
        yield {"stream": arn, "consumer": consumer}


def _mappings(source: str) -> list[dict[str, Any]]:
    return list(aws.client("lambda", Config()).list_event_source_mappings(EventSourceArn=source,
                                                                          FunctionName=INGEST)["EventSourceMappings"])


def _transformed_records_wait(kinesis: Any) -> None:
    """With message transforms on the import topic (set where no check runs), the ingest function invokes the
    transform function; moto's answers with a function error, so the record is not published."""
    services = runtime.services()
    topic = names.make(P, "topics", "imported")
    rec = services.ctx.resources.require_topic(topic)
    udf = MessageTransform(javascript_udf=JavaScriptUdf(function_name="up", code="function up(m) { return m; }"))
    services.ctx.resources.put_topic(topic, TopicRecord(rec.spec.model_copy(update={"message_transforms": [udf]}),
                                                        rec.created))
    put = kinesis.put_record(StreamName=STREAM, Data=b"shaped", PartitionKey="k")
    iterator = kinesis.get_shard_iterator(StreamName=STREAM, ShardId=put["ShardId"],
                                          ShardIteratorType="AT_SEQUENCE_NUMBER",
                                          StartingSequenceNumber=put["SequenceNumber"])["ShardIterator"]
    records = kinesis.get_records(ShardIterator=iterator, Limit=1)["Records"]
    stream = kinesis.describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamARN"]
    runtime.reset()
    out = event_handlers.ingest(ingestion.kinesis_event(stream, put["ShardId"], records, Config().region))
    assert [f["itemIdentifier"] for f in out["batchItemFailures"]] == [put["SequenceNumber"]]  # Lambda retries it
    got = runtime.services().pull.pull(names.make(P, "subscriptions", "reader"),
                                       PullRequest(max_messages=10, return_immediately=True))
    assert [m.data for m in got.received if m.data == b"shaped"] == []
    runtime.services().ctx.resources.put_topic(topic, rec)  # as it was


def test_import_paths_of_each_function(stage: dict[str, str]) -> None:
    with Client(app, stage_name="dev") as client:
        api = Api(client)
        api.ok("POST", "", {"description": "import paths"})
        other = api.ok("PUT", "/topics/other-consumer", {"ingestionDataSourceSettings": {"awsKinesis": {
            "streamArn": stage["stream"], "consumerArn": stage["stream"] + "/consumer/gone:1", "awsRoleArn": ROLE}}})
        assert other["ingestionDataSourceSettings"]["awsKinesis"]["state"] == "CONSUMER_NOT_FOUND"
        assert other["state"] == "INGESTION_RESOURCE_ERROR"
        assert _mappings(stage["stream"]) == []  # no mapping for a source in error
        made = api.ok("PUT", "/topics/imported", {"ingestionDataSourceSettings": {"awsKinesis": {
            "streamArn": stage["stream"], "awsRoleArn": ROLE}}})
        assert made["state"] == "ACTIVE"
        assert made["ingestionDataSourceSettings"]["awsKinesis"]["state"] == "ACTIVE"
        (mapping,) = _mappings(stage["stream"])
        assert mapping["BatchSize"] == 100
        for m in _mappings(stage["stream"]):  # moto's mapping would feed a Lambda it does not run
            aws.client("lambda", Config()).update_event_source_mapping(UUID=m["UUID"], Enabled=False)
        api.ok("PUT", "/subscriptions/reader", {"topic": f"projects/{P}/topics/imported"})
        files = api.ok("PUT", "/topics/files", {"ingestionDataSourceSettings": {"cloudStorage": {
            "bucket": BUCKET, "textFormat": {}}}})
        assert files["state"] == "ACTIVE"
        api.ok("PUT", "/subscriptions/files-reader", {"topic": f"projects/{P}/topics/files"})

    kinesis = aws.client("kinesis", Config())
    for i in range(3):
        kinesis.put_record(StreamName=STREAM, Data=b"r%d" % i, PartitionKey="k")
    runtime.reset()
    assert IngestPump(Config(), event_handlers.ingest).poll_once() == 3  # reads as the mapping, ingests as ingest
    got = runtime.services().pull.pull(names.make(P, "subscriptions", "reader"),
                                       PullRequest(max_messages=10, return_immediately=True))
    assert sorted(m.data for m in got.received) == [b"r0", b"r1", b"r2"]
    _transformed_records_wait(kinesis)

    aws.client("s3", Config()).put_object(Bucket=BUCKET, Key="in/a.txt", Body=b"x\ny\n")
    runtime.reset()
    assert event_handlers.ingest_scan()["published"] == 2  # the maintenance schedule's scan
    got = runtime.services().pull.pull(names.make(P, "subscriptions", "files-reader"),
                                       PullRequest(max_messages=10, return_immediately=True))
    assert sorted(m.data for m in got.received) == [b"x", b"y"]

    with Client(app, stage_name="dev") as client:
        Api(client).ok("DELETE", "/topics/imported")
    assert _mappings(stage["stream"]) == []  # the other topic reading the stream has no mapping of its own
