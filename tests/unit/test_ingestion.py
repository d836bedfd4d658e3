"""Import topics' pure parts: ARNs, Google's glob, source records as messages (Kinesis and MSK events), the object
readers, failure events and platform-log severities."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from chalicelib.core import ingestion, ingestion_objects
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.ingestion import CloudStorage
from chalicelib.service.ingestor import derived_rid

FIXTURES = Path(__file__).parent / "fixtures"
STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"


def test_stream_consumer_role_and_cluster_arns() -> None:
    s = ingestion.stream_arn(STREAM)
    assert (s.region, s.account, s.name) == ("us-east-1", "123456789012", "orders")
    c = ingestion.consumer_arn(f"{STREAM}/consumer/app:1700000000", s)
    assert c.name == "orders/app"
    assert ingestion.role_arn("arn:aws:iam::123456789012:role/path/ingest", "r").name == "path/ingest"
    assert ingestion.cluster_arn("arn:aws:kafka:eu-west-1:123456789012:cluster/demo/abcd-1234-5").name == "demo"
    assert ingestion.stream_arn("arn:aws-cn:kinesis:cn-north-1:123456789012:stream/x").region == "cn-north-1"


@pytest.mark.parametrize("call", [
    lambda: ingestion.stream_arn("arn:aws:kinesis:us-east-1:12345:stream/x"),
    lambda: ingestion.stream_arn("arn:aws:sqs:us-east-1:123456789012:stream/x"),
    lambda: ingestion.consumer_arn("arn:aws:kinesis:us-east-1:123456789012:stream/other/consumer/c:1",
                                   ingestion.stream_arn(STREAM)),
    lambda: ingestion.role_arn("arn:aws:iam::123456789012:user/bob", "awsRoleArn"),
    lambda: ingestion.cluster_arn("arn:aws:kafka:us-east-1:123456789012:topic/x/y"),
    lambda: ingestion.kafka_topic("bad topic"),
])
def test_bad_arns_are_invalid_arguments(call: Any) -> None:
    with pytest.raises(InvalidArgument):
        call()


@pytest.mark.parametrize("pattern, name, matches", [
    ("*.txt", "a.txt", True),
    ("*.txt", "dir/a.txt", False),
    ("**.txt", "dir/a.txt", True),
    ("in/**/x.csv", "in/x.csv", True),
    ("in/**/x.csv", "in/a/b/x.csv", True),
    ("file?.log", "file1.log", True),
    ("file?.log", "file12.log", False),
    ("[ab]*.json", "b1.json", True),
    ("[!ab]*.json", "a1.json", False),
    ("{logs,events}/*", "events/e1", True),
    ("{logs,events}/*", "other/e1", False),
    ("a.b", "axb", False),
    ("", "anything/at/all", True),
])
def test_google_glob(pattern: str, name: str, matches: bool) -> None:
    assert ingestion.glob_matches(pattern, name) is matches


def test_kinesis_event_round_trip_to_messages() -> None:
    raw = [{"PartitionKey": "user-1", "SequenceNumber": "4959", "Data": b"hello", "ApproximateArrivalTimestamp": 1.5}]
    event = ingestion.kinesis_event(STREAM, "shardId-000000000000", raw, "us-east-1")
    [rec] = ingestion.kinesis_records(event)
    assert rec.message.data == b"hello"
    assert rec.message.ordering_key == "user-1"  # the partition key
    assert (rec.source, rec.partition, rec.position) == (STREAM, "shardId-000000000000", "4959")
    assert rec.details == {"stream_arn": STREAM, "partition_key": "user-1", "sequence_number": "4959"}


def test_msk_event_from_awss_documented_example() -> None:
    event = json.loads((FIXTURES / "msk_event.json").read_text())
    recs = ingestion.msk_records(event)
    assert len(recs) == 2
    first = recs[0]
    assert first.message.data == b'{"key":"value"}'
    assert first.message.ordering_key == "recordKey"
    assert first.message.attributes == {"headerKey": "headerValue"}
    assert (first.partition, first.position) == ("mytopic-0", "15")
    assert first.details["cluster_arn"] == event["eventSourceArn"]
    assert recs[1].message.ordering_key == ""  # no key


def test_positions_compare_as_numbers() -> None:
    assert ingestion.position_after("10", "9")
    assert not ingestion.position_after("9", "10")
    assert ingestion.position_after("1", None)
    big = "49590338271490256608559692538361571095921575989136588898"
    assert ingestion.position_after(str(int(big) + 1), big)


def test_failure_event_shape() -> None:
    event = ingestion.failure_event("projects/p/topics/t", "kinesis", "bad", ingestion.SCHEMA,
                                    {"stream_arn": STREAM, "partition_key": "k", "sequence_number": "1"})
    assert event == {"topic": "projects/p/topics/t", "error_message": "bad",
                     "aws_kinesis_failure": {"stream_arn": STREAM, "partition_key": "k", "sequence_number": "1",
                                             "schema_violation_reason": {}}}
    assert ingestion.reason_of("message transform failed: TypeError") == ingestion.TRANSFORM
    assert "cloud_storage_failure" in ingestion.failure_event("t", "storage", "e", ingestion.AVRO, {})


@pytest.mark.parametrize("severity, logged", [
    (None, False), ("SEVERITY_UNSPECIFIED", False), ("DISABLED", False), (1, False),
    ("DEBUG", True), ("INFO", True), ("WARNING", True), (4, True), ("ERROR", False)])
def test_failures_are_logged_by_severity(severity: str | int | None, logged: bool) -> None:
    assert ingestion.failure_logged(severity) is logged


def test_unknown_severity_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        ingestion.severity_name("LOUD")


def test_text_reader_splits_on_the_delimiter() -> None:
    assert [m.data for m in ingestion_objects.text_messages(b"a\nb\n\nc\n")] == [b"a", b"b", b"c"]
    assert [m.data for m in ingestion_objects.text_messages(b"a|b", b"|")] == [b"a", b"b"]
    assert ingestion_objects.delimiter_of(CloudStorage(bucket="b", text_format={"delimiter": ","})) == b","
    with pytest.raises(InvalidArgument):
        ingestion_objects.delimiter_of(CloudStorage(bucket="b", text_format={"delimiter": "ab"}))


def _avro(schema: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    return out.getvalue()


def test_avro_reader_gives_each_record_in_binary_encoding() -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}]}
    got = list(ingestion_objects.avro_messages(_avro(schema, [{"s": "x"}, {"s": "yz"}])))
    parsed = fastavro.parse_schema(schema)
    assert [fastavro.schemaless_reader(io.BytesIO(m.data), parsed) for m in got] == [{"s": "x"}, {"s": "yz"}]
    with pytest.raises(InvalidArgument):
        list(ingestion_objects.avro_messages(b"not avro"))


def test_pubsub_avro_reader_restores_data_and_attributes() -> None:
    schema = {"type": "record", "name": "PubsubMessage", "fields": [
        {"name": "subscription_name", "type": "string"}, {"name": "message_id", "type": "string"},
        {"name": "publish_time", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "attributes", "type": {"type": "map", "values": "string"}},
        {"name": "data", "type": "bytes"}]}
    body = _avro(schema, [{"subscription_name": "s", "message_id": "1", "publish_time": 0,
                           "attributes": {"k": "v"}, "data": b"payload"}])
    [m] = ingestion_objects.pubsub_avro_messages(body)
    assert (m.data, m.attributes) == (b"payload", {"k": "v"})


def test_exactly_one_format() -> None:
    with pytest.raises(InvalidArgument):
        ingestion_objects.format_of(CloudStorage(bucket="b"))
    assert ingestion_objects.format_of(CloudStorage(bucket="b", avro_format={})) == ingestion_objects.AVRO


def test_derived_request_ids_keep_the_millisecond() -> None:
    rid = "1800000000000999999"
    assert derived_rid(rid, 1) == "1800000000000000000"
    assert derived_rid(rid, 0) == rid
    assert len(derived_rid(rid, 2001)) == len(rid)


def test_base64_key_decoding_in_msk_records() -> None:
    event = {"eventSource": "aws:kafka", "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/c/u",
             "records": {"t-1": [{"topic": "t", "partition": 1, "offset": 7,
                                  "key": base64.b64encode(b"k").decode(), "value": base64.b64encode(b"v").decode(),
                                  "headers": []}]}}
    [rec] = ingestion.msk_records(event)
    assert (rec.message.ordering_key, rec.partition, rec.position) == ("k", "t-1", "7")
