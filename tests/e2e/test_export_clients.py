"""Export subscriptions (cloudStorageConfig) through the real clients against the local stack: google-cloud-pubsub on
REST and on gRPC creates one with ``types.CloudStorageConfig``, publishes, and the stack's export pump writes the
files into the emulator's S3, read back here with boto3: Google's text (one message per line) and Avro records.
google-api-python-client's discovery document carries the same fields."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import boto3
import fastavro
import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import types

from tests.e2e import google_helpers
from tests.e2e.polling import read_until
from tests.stack import RunningStack

pytestmark = pytest.mark.e2e
PROJECT = "export-e2e"
# 1.8 KB of data, then one message of 1 KB published last: maxBytes 1000 makes every batch due, whatever the
# pump had received when it cut the one before (a remainder under maxBytes would wait for maxDuration)
DATA = [(b"%03d-" % i) + b"x" * 300 for i in range(6)] + [b"999-" + b"y" * 1000]


@pytest.fixture(scope="module")
def s3(stack: RunningStack) -> Any:
    return boto3.client("s3", endpoint_url=stack.emulator_url, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


@pytest.fixture
def bucket(s3: Any, unique: str) -> Iterator[str]:
    name = f"export-{unique}".lower().replace("_", "-")
    s3.create_bucket(Bucket=name)
    yield name


@pytest.fixture(scope="module")
def grpc_clients(stack: RunningStack) -> tuple[Any, Any]:
    return google_helpers.grpc_clients(stack.host)


def files(s3: Any, bucket: str, want: int, timeout: float = 30) -> dict[str, bytes]:
    """The bucket's objects once their messages number ``want`` (bounded: the stack runs in another process)."""
    def read() -> dict[str, bytes]:
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        return {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}

    return read_until(read, lambda got: sum(count(body) for body in got.values()) >= want, timeout)


def count(body: bytes) -> int:
    if body.startswith(b"Obj\x01"):
        return len(list(fastavro.reader(io.BytesIO(body))))
    return len(body.split(b"\n")) if body else 0


def run(publisher: Any, subscriber: Any, bucket: str, s3: Any, unique: str, transport: str,
        avro: bool) -> tuple[list[str], dict[str, bytes], Any]:
    topic = f"projects/{PROJECT}/topics/{transport}-{unique}"
    sub = f"projects/{PROJECT}/subscriptions/{transport}-{unique}"
    publisher.create_topic(name=topic)
    config = types.CloudStorageConfig(
        bucket=bucket, filename_prefix="out/", filename_suffix=".avro" if avro else ".txt", max_bytes=1000,
        **({"avro_config": types.CloudStorageConfig.AvroConfig(write_metadata=True)} if avro
           else {"text_config": types.CloudStorageConfig.TextConfig()}))
    created = subscriber.create_subscription(request={"name": sub, "topic": topic, "cloud_storage_config": config})
    assert created.cloud_storage_config.bucket == bucket
    assert created.cloud_storage_config.state == types.CloudStorageConfig.State.ACTIVE
    ids = [publisher.publish(topic, d, k="v").result(timeout=30) for d in DATA]
    got = files(s3, bucket, len(DATA))
    return ids, got, subscriber.get_subscription(subscription=sub)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_text_files_through_google_cloud_pubsub(transport: str, client_options: dict[str, str],
                                                grpc_clients: tuple[Any, Any], bucket: str, s3: Any,
                                                unique: str) -> None:
    publisher, subscriber = grpc_clients if transport == "grpc" else (
        pubsub_v1.PublisherClient(transport="rest", client_options=client_options, credentials=AnonymousCredentials()),
        pubsub_v1.SubscriberClient(transport="rest", client_options=client_options,
                                   credentials=AnonymousCredentials()))
    _, got, reported = run(publisher, subscriber, bucket, s3, unique, transport, avro=False)
    lines = sorted(line for body in got.values() for line in body.split(b"\n"))
    assert lines == sorted(DATA)  # one message per line, none lost (a retried batch would overwrite its file)
    assert all(k.startswith("out/") and k.endswith(".txt") and "+00:00_" in k for k in got)
    assert reported.cloud_storage_config.text_config is not None


def test_avro_files_with_metadata_over_grpc(grpc_clients: tuple[Any, Any], bucket: str, s3: Any,
                                            unique: str) -> None:
    publisher, subscriber = grpc_clients
    ids, got, _ = run(publisher, subscriber, bucket, s3, unique, "avro", avro=True)
    records = [r for body in got.values() for r in fastavro.reader(io.BytesIO(body))]
    assert sorted(r["data"] for r in records) == sorted(DATA)
    assert sorted(r["message_id"] for r in records) == sorted(ids)
    assert all(r["attributes"] == {"k": "v"} and r["subscription_name"].endswith(f"avro-{unique}")
               for r in records)
    schema = fastavro.reader(io.BytesIO(next(iter(got.values())))).writer_schema
    assert schema is not None and schema["name"] == "PubsubMessageWithMetadata"


def test_refusals_through_the_client(grpc_clients: tuple[Any, Any], unique: str) -> None:
    publisher, subscriber = grpc_clients
    topic = f"projects/{PROJECT}/topics/refused-{unique}"
    publisher.create_topic(name=topic)
    with pytest.raises(gexc.FailedPrecondition):  # the bucket is checked through boto3 against the emulator
        subscriber.create_subscription(request={
            "name": f"projects/{PROJECT}/subscriptions/refused-{unique}", "topic": topic,
            "cloud_storage_config": types.CloudStorageConfig(bucket=f"missing-export-{unique}".lower())})
    with pytest.raises(gexc.InvalidArgument):
        subscriber.create_subscription(request={
            "name": f"projects/{PROJECT}/subscriptions/refused-{unique}", "topic": topic,
            "cloud_storage_config": types.CloudStorageConfig(bucket="any-export-bucket", max_messages=10)})


def test_discovery_document_carries_cloud_storage_config(discovery: Any, bucket: str, s3: Any, unique: str) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic, sub = f"projects/{PROJECT}/topics/d-{unique}", f"projects/{PROJECT}/subscriptions/d-{unique}"
    topics.create(name=topic, body={}).execute()
    created = subs.create(name=sub, body={"topic": topic, "cloudStorageConfig": {
        "bucket": bucket, "maxBytes": "1000", "filenameDatetimeFormat": "YYYY/MM/DD/hh_mm_ss",
        "avroConfig": {}}}).execute()
    assert created["cloudStorageConfig"]["state"] == "ACTIVE"
    assert created["cloudStorageConfig"]["avroConfig"] == {}
    topics.publish(topic=topic, body={"messages": [{"data": base64.b64encode(d).decode()} for d in DATA]}).execute()
    got = files(s3, bucket, len(DATA))
    records = [r for body in got.values() for r in fastavro.reader(io.BytesIO(body))]
    assert sorted(r["data"] for r in records) == sorted(DATA) and set(records[0]) == {"data"}
    assert all(k.count("/") == 3 for k in got)  # YYYY/MM/DD/hh_mm_ss_<uuid>
