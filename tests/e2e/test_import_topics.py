"""Import topics end to end: google-cloud-pubsub creates a Kinesis import topic (types.IngestionDataSourceSettings)
on its REST and gRPC transports, records go into the local emulator's Kinesis through boto3, and a subscription
pulls every record once (the stack's ingest pump plays the event source mapping)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import boto3
import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import types

from tests.e2e import google_helpers
from tests.stack import RunningStack

pytestmark = pytest.mark.e2e
PROJECT = "import-e2e"


def _clients(stack: RunningStack, transport: str) -> tuple[Any, Any]:
    if transport == "rest":
        opts = {"api_endpoint": stack.url}
        return (pubsub_v1.PublisherClient(transport="rest", client_options=opts, credentials=AnonymousCredentials()),
                pubsub_v1.SubscriberClient(transport="rest", client_options=opts, credentials=AnonymousCredentials()))
    return google_helpers.grpc_clients(stack.host)  # an insecure gRPC channel to the stack's port


def _kinesis(stack: RunningStack) -> Any:
    return boto3.client("kinesis", endpoint_url=stack.emulator_url, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_kinesis_import_topic_delivers_every_record_once(stack: RunningStack, unique: str, transport: str) -> None:
    publisher, subscriber = _clients(stack, transport)
    kinesis = _kinesis(stack)
    stream = f"import-{transport}-{unique}"
    kinesis.create_stream(StreamName=stream, ShardCount=2)
    arn = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    topic, sub = f"projects/{PROJECT}/topics/t-{unique}", f"projects/{PROJECT}/subscriptions/s-{unique}"
    settings = types.IngestionDataSourceSettings(
        aws_kinesis=types.IngestionDataSourceSettings.AwsKinesis(stream_arn=arn),
        platform_logs_settings=types.PlatformLogsSettings(severity=types.PlatformLogsSettings.Severity.WARNING))
    made = publisher.create_topic(request={"name": topic, "ingestion_data_source_settings": settings})
    assert made.state == types.Topic.State.ACTIVE
    assert made.ingestion_data_source_settings.aws_kinesis.state == \
        types.IngestionDataSourceSettings.AwsKinesis.State.ACTIVE
    assert made.ingestion_data_source_settings.aws_kinesis.stream_arn == arn
    subscriber.create_subscription(name=sub, topic=topic)

    sent = [f"record-{i}".encode() for i in range(60)]
    for i, data in enumerate(sent):
        kinesis.put_record(StreamName=stream, Data=data, PartitionKey=f"key-{i % 7}")

    seen: Counter[bytes] = Counter()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(seen) < len(sent):
        got = subscriber.pull(subscription=sub, max_messages=100, timeout=30)
        for m in got.received_messages:
            seen[m.message.data] += 1
            assert m.message.ordering_key.startswith("key-")  # the record's partition key
        if got.received_messages:
            subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got.received_messages])
    assert sorted(seen) == sorted(sent)
    assert set(seen.values()) == {1}
    # the pump has read both shards to their ends by now: one more pull finds no duplicate
    again = subscriber.pull(subscription=sub, max_messages=100, return_immediately=True, timeout=30)
    assert list(again.received_messages) == []

    fetched = publisher.get_topic(topic=topic)
    assert fetched.ingestion_data_source_settings.aws_kinesis.stream_arn == arn


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_an_event_hubs_source_is_refused_with_the_reason(stack: RunningStack, unique: str, transport: str) -> None:
    publisher, _ = _clients(stack, transport)
    from google.api_core import exceptions as gexc

    settings = types.IngestionDataSourceSettings(
        azure_event_hubs=types.IngestionDataSourceSettings.AzureEventHubs(namespace="ns", event_hub="hub"))
    with pytest.raises(gexc.BadRequest, match="no AWS counterpart"):  # REST: 400; gRPC: INVALID_ARGUMENT
        publisher.create_topic(request={"name": f"projects/{PROJECT}/topics/eh-{transport}-{unique}",
                                        "ingestion_data_source_settings": settings})


def test_a_cloud_storage_import_topic_reads_each_matching_object_once(stack: RunningStack, unique: str) -> None:
    publisher, subscriber = _clients(stack, "rest")
    s3 = boto3.client("s3", endpoint_url=stack.emulator_url, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    bucket = f"import-{unique}"
    s3.create_bucket(Bucket=bucket)
    topic, sub = f"projects/{PROJECT}/topics/gcs-{unique}", f"projects/{PROJECT}/subscriptions/gcs-{unique}"
    settings = types.IngestionDataSourceSettings(cloud_storage=types.IngestionDataSourceSettings.CloudStorage(
        bucket=bucket, text_format=types.IngestionDataSourceSettings.CloudStorage.TextFormat(delimiter=","),
        match_glob="in/**.csv"))
    made = publisher.create_topic(request={"name": topic, "ingestion_data_source_settings": settings})
    assert made.ingestion_data_source_settings.cloud_storage.state == \
        types.IngestionDataSourceSettings.CloudStorage.State.ACTIVE
    subscriber.create_subscription(name=sub, topic=topic)
    s3.put_object(Bucket=bucket, Key="in/a.csv", Body=b"a1,a2,a3")
    s3.put_object(Bucket=bucket, Key="in/deep/b.csv", Body=b"b1")
    s3.put_object(Bucket=bucket, Key="in/c.txt", Body=b"not,matched")

    seen: Counter[bytes] = Counter()
    deadline = time.monotonic() + 60  # the pump scans every 5 s
    while time.monotonic() < deadline and len(seen) < 4:
        got = subscriber.pull(subscription=sub, max_messages=100, timeout=30)
        seen.update(m.message.data for m in got.received_messages)
        if got.received_messages:
            subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got.received_messages])
    assert seen == Counter({b"a1": 1, b"a2": 1, b"a3": 1, b"b1": 1})
