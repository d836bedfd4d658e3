"""The objects a Cloud Storage import topic reads, as messages (pure; docs/import.md).

- textFormat: the object split by its delimiter (a newline by default); each piece is one message's data (an
  empty piece, such as the end after a trailing delimiter, is none).
- avroFormat: an Avro object container file; each record, encoded in Avro's binary form with the file's schema,
  is one message's data.
- pubsubAvroFormat: Avro files in the record shape an export subscription writes (``data`` bytes, ``attributes``
  map, ``message_id``, ``publish_time``...): each record's ``data`` and ``attributes`` become the message.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import fastavro

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.ingestion import CloudStorage
from chalicelib.core.wire.messages import NewMessage

TEXT, AVRO, PUBSUB_AVRO = "text", "avro", "pubsub_avro"


def format_of(source: CloudStorage) -> str:
    formats = [f for f, v in ((TEXT, source.text_format), (AVRO, source.avro_format),
                              (PUBSUB_AVRO, source.pubsub_avro_format)) if v is not None]
    if len(formats) != 1:
        raise InvalidArgument("cloudStorage needs exactly one of textFormat, avroFormat and pubsubAvroFormat")
    return formats[0]


def delimiter_of(source: CloudStorage) -> bytes:
    delimiter = (source.text_format.delimiter if source.text_format else None) or "\n"
    if len(delimiter.encode()) != 1:
        raise InvalidArgument("cloudStorage.textFormat.delimiter must be a single character")
    return delimiter.encode()


def text_messages(body: bytes, delimiter: bytes = b"\n") -> Iterator[NewMessage]:
    for piece in body.split(delimiter):
        if piece:
            yield NewMessage(piece)


def avro_messages(body: bytes) -> Iterator[NewMessage]:
    """Each record of an Avro container file in Avro's binary encoding (refuses a body that is not Avro)."""
    try:
        reader = fastavro.reader(io.BytesIO(body))
        schema = reader.writer_schema
        for record in reader:
            out = io.BytesIO()
            fastavro.schemaless_writer(out, schema, record)
            yield NewMessage(out.getvalue())
    except (ValueError, TypeError, EOFError, KeyError, IndexError) as exc:
        raise InvalidArgument(f"not an Avro object container file: {exc}") from None


def pubsub_avro_messages(body: bytes) -> Iterator[NewMessage]:
    """Each record of an export subscription's Avro file as the message it was (data and attributes)."""
    try:
        for record in fastavro.reader(io.BytesIO(body)):
            if not isinstance(record, dict) or "data" not in record:
                raise InvalidArgument("a Pub/Sub Avro record needs a data field")
            yield NewMessage(_bytes(record["data"]), _attributes(record.get("attributes")))
    except (ValueError, TypeError, EOFError, KeyError, IndexError) as exc:
        raise InvalidArgument(f"not an Avro object container file: {exc}") from None


def _bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value or b"")


def _attributes(value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, list):  # an array of {key, value} records
        return {str(e.get("key")): str(e.get("value")) for e in value if isinstance(e, dict)}
    return {}


def messages(kind: str, body: bytes, delimiter: bytes = b"\n") -> Iterator[NewMessage]:
    if kind == TEXT:
        return text_messages(body, delimiter)
    if kind == AVRO:
        return avro_messages(body)
    return pubsub_avro_messages(body)
