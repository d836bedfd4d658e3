"""Export subscriptions' files: Google's limits, the object name, and the text and Avro formats read back."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from chalicelib.core import export_files
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.export_files import Message
from chalicelib.core.wire.export import AvroConfig, CloudStorageConfig, TextConfig

EPOCH = 1_700_000_000.25  # 2023-11-14T22:13:20.25Z
SUB = "projects/p/subscriptions/s"


def cfg(**kw: object) -> CloudStorageConfig:
    return CloudStorageConfig.model_validate({"bucket": "my-bucket", **kw})


def test_defaults_are_googles() -> None:
    s = export_files.settings(cfg())
    assert (s.max_seconds, s.max_bytes, s.max_messages, s.avro) == (300.0, 0, 0, None)
    assert s.datetime_format == "YYYY-MM-DDThh:mm:ssZ"
    assert export_files.normalized(cfg()).text_config == TextConfig()
    assert export_files.batching_window(s) == 300 and export_files.batch_size(s) == 10_000


@pytest.mark.parametrize("fields", [
    {"maxDuration": "59s"}, {"maxDuration": "601s"}, {"maxBytes": 999}, {"maxBytes": 10 * 1024**3 + 1},
    {"maxMessages": 999}, {"filenameSuffix": "x/"}, {"textConfig": {}, "avroConfig": {}},
    {"filenameDatetimeFormat": "YYYY-MM-DD%H"}, {"filenameDatetimeFormat": "YYYY-YYYY"}, {"bucket": "gs://b"},
    {"bucket": ""},
])
def test_limits_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidArgument):
        export_files.settings(cfg(**fields))


def test_limits_at_their_edges_pass() -> None:
    s = export_files.settings(cfg(maxDuration="60s", maxBytes="1000", maxMessages=1000, avroConfig={}))
    assert (s.max_seconds, s.max_bytes, s.max_messages) == (60.0, 1000, 1000)
    assert export_files.settings(cfg(maxDuration="600s", maxBytes=10 * 1024**3)).max_seconds == 600.0
    assert export_files.batch_size(s) == 1000 and export_files.batching_window(s) == 60


def test_object_name_is_prefix_datetime_unique_suffix() -> None:
    s = export_files.settings(cfg(filenamePrefix="log_events_", filenameSuffix=".txt"))
    unique = export_files.unique_part(SUB, ["2", "1"])
    assert export_files.object_name(s, EPOCH, unique) == f"log_events_2023-11-14T22:13:20+00:00_{unique}.txt"
    custom = export_files.settings(cfg(filenameDatetimeFormat="YYYY/MM/DD/hh_mm_ss"))
    assert export_files.object_name(custom, EPOCH, "u") == "2023/11/14/22_13_20_u"


def test_unique_part_is_the_batchs() -> None:
    a = export_files.unique_part(SUB, ["1", "2"])
    assert a == export_files.unique_part(SUB, ["2", "1"])  # a retried batch overwrites its object
    assert a != export_files.unique_part(SUB, ["1", "3"]) and a != export_files.unique_part(SUB + "x", ["1", "2"])
    assert len(a) == 36


MESSAGES = [Message("1", EPOCH, b"hello", {"k": "v"}, "key-a"), Message("2", EPOCH + 1, b"\x00\xffbin")]


def test_text_is_data_separated_by_newlines() -> None:
    assert export_files.text_file(MESSAGES) == b"hello\n\x00\xffbin"


def read(body: bytes) -> tuple[dict[str, object], list[dict[str, object]]]:
    reader = fastavro.reader(io.BytesIO(body))
    return json.loads(reader.metadata["avro.schema"]), list(reader)


def test_avro_without_metadata_holds_data_only() -> None:
    schema, records = read(export_files.avro_file(MESSAGES, AvroConfig(), SUB))
    assert schema["name"] == "PubsubMessage" and [f["name"] for f in schema["fields"]] == ["data"]
    assert records == [{"data": b"hello"}, {"data": b"\x00\xffbin"}]


def test_avro_with_metadata_is_googles_record() -> None:
    schema, records = read(export_files.avro_file(MESSAGES, AvroConfig(write_metadata=True), SUB))
    assert schema["name"] == "PubsubMessageWithMetadata"
    assert [f["name"] for f in schema["fields"]] == ["subscription_name", "message_id", "publish_time", "attributes",
                                                     "data"]
    first = records[0]
    assert first["subscription_name"] == SUB and first["message_id"] == "1" and first["data"] == b"hello"
    assert first["attributes"] == {"k": "v", "ordering_key": "key-a"}
    assert first["publish_time"].timestamp() == pytest.approx(EPOCH)  # timestamp-micros
    assert records[1]["attributes"] == {}


def test_avro_with_the_topic_schema() -> None:
    topic = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    body = export_files.avro_file(MESSAGES, AvroConfig(use_topic_schema=True), SUB, topic, [{"id": 1}, {"id": 2}])
    schema, records = read(body)
    assert schema["name"] == "Order" and records == [{"id": 1}, {"id": 2}]
    body = export_files.avro_file(MESSAGES, AvroConfig(use_topic_schema=True, write_metadata=True), SUB, topic,
                                  [{"id": 1}, {"id": 2}])
    assert read(body)[1][1]["data"] == {"id": 2}


def test_batch_full() -> None:
    s = export_files.settings(cfg(maxBytes=2000, maxMessages=1000))
    assert not export_files.batch_full(s, 999, 1999)
    assert export_files.batch_full(s, 1000, 1) and export_files.batch_full(s, 1, 2000)


def test_decode_avro_in_both_encodings_and_a_mismatch() -> None:
    definition = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(json.loads(definition)), {"id": 7})
    assert export_files.decode_avro(definition, "BINARY", buf.getvalue()) == {"id": 7}
    assert export_files.decode_avro(definition, "JSON", b'{"id": 8}') == {"id": 8}
    with pytest.raises(ValueError):
        export_files.decode_avro(definition, "JSON", b'{"name": "x"}')
    with pytest.raises(ValueError):
        export_files.decode_avro(definition, "BINARY", buf.getvalue() + b"\x00")


def test_the_export_states_as_integers() -> None:
    from chalicelib.api.http import _int_enums

    wire = {"cloudStorageConfig": {"state": "NOT_FOUND"}, "state": "ACTIVE"}
    assert _int_enums(wire) == {"cloudStorageConfig": {"state": 3}, "state": 1}  # CloudStorageConfig.State
    assert _int_enums({"cloudStorageConfig": {"state": "PERMISSION_DENIED"}})["cloudStorageConfig"]["state"] == 2
