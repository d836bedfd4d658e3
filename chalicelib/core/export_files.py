"""Export subscriptions' files (``cloudStorageConfig``), pure: Google's limits, the object name, and the two
formats, text and Avro, byte for byte as Google's Cloud Storage subscriptions write them (docs/export.md).

- limits: maxDuration 1-10 minutes (default 5), maxBytes 1 KB-10 GiB, maxMessages at least 1000, a suffix not
  ending in ``/``, exactly one of textConfig and avroConfig (text when neither is set);
- the name: ``<filenamePrefix><datetime>_<unique part><filenameSuffix>``, the datetime in the
  ``filenameDatetimeFormat`` (tokens ``YYYY MM DD hh mm ss Z``, Z being ``+00:00``; default
  ``YYYY-MM-DDThh:mm:ssZ``), the unique part a UUID derived from the batch's message ids, so that a retried
  batch of the same messages overwrites its own object instead of writing a second one;
- text: the messages' data separated by newlines;
- Avro: an Avro object container file of Google's records: ``PubsubMessage`` (``data``) or, with
  ``writeMetadata``, ``PubsubMessageWithMetadata`` (``subscription_name``, ``message_id``, ``publish_time`` in
  microseconds, ``attributes``, ``data``); with ``useTopicSchema`` the topic's Avro schema's records instead of
  bytes in ``data`` (or as the whole record without metadata).
"""

from __future__ import annotations

import functools
import io
import json
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.timefmt import parse_duration
from chalicelib.core.wire.export import AvroConfig, CloudStorageConfig, TextConfig

MAX_DURATION_MIN = 60.0
MAX_DURATION_MAX = 600.0
MAX_DURATION_DEFAULT = 300.0
MAX_BYTES_MIN = 1000
MAX_BYTES_MAX = 10 * 1024**3
MAX_MESSAGES_MIN = 1000
DEFAULT_DATETIME_FORMAT = "YYYY-MM-DDThh:mm:ssZ"

# Lambda's SQS event source: at most 10,000 records per invocation and a batching window of 300 s; an
# invocation's event is at most 6 MB. One file holds one invocation's batch.
LAMBDA_MAX_BATCH = 10_000
LAMBDA_MAX_WINDOW = 300
LAMBDA_MAX_PAYLOAD = 6 * 1024 * 1024

ACTIVE, PERMISSION_DENIED, NOT_FOUND = "ACTIVE", "PERMISSION_DENIED", "NOT_FOUND"
STATES = (ACTIVE, PERMISSION_DENIED, NOT_FOUND)

_TOKENS = ("YYYY", "MM", "DD", "hh", "mm", "ss", "Z")
_TOKEN_RE = re.compile("|".join(_TOKENS))
_DELIMITERS = set("-_:/T. ")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")

DATA_ONLY_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "PubsubMessage",
    "fields": [{"name": "data", "type": "bytes"}],
}


def metadata_schema(data_type: Any = "bytes") -> dict[str, Any]:
    """Google's record with writeMetadata; ``data`` holds bytes, or the topic schema's record."""
    return {
        "type": "record", "name": "PubsubMessageWithMetadata",
        "fields": [
            {"name": "subscription_name", "type": "string"},
            {"name": "message_id", "type": "string"},
            {"name": "publish_time", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "attributes", "type": {"type": "map", "values": "string"}},
            {"name": "data", "type": data_type},
        ],
    }


@dataclass(frozen=True)
class Settings:
    """A cloudStorageConfig with Google's defaults filled in."""

    bucket: str
    prefix: str
    suffix: str
    datetime_format: str
    avro: AvroConfig | None  # None: text
    max_seconds: float
    max_bytes: int  # 0: no byte limit of its own
    max_messages: int  # 0: no count limit of its own
    service_account: str = ""


def settings(cfg: CloudStorageConfig) -> Settings:
    """Check ``cfg`` (INVALID_ARGUMENT naming the field) and fill in the defaults."""
    if not cfg.bucket:
        raise InvalidArgument("Invalid cloud_storage_config: bucket must be set.")
    if cfg.bucket.startswith("gs://") or cfg.bucket.startswith("s3://") or not _BUCKET_RE.match(cfg.bucket):
        raise InvalidArgument(f"Invalid cloud_storage_config.bucket {cfg.bucket!r}: a bucket name without a prefix "
                              "such as gs:// or s3://.")
    if cfg.text_config is not None and cfg.avro_config is not None:
        raise InvalidArgument("Invalid cloud_storage_config: only one of text_config and avro_config may be set.")
    if cfg.filename_suffix.endswith("/"):
        raise InvalidArgument("Invalid cloud_storage_config.filename_suffix: must not end in \"/\".")
    check_datetime_format(cfg.filename_datetime_format)
    seconds = MAX_DURATION_DEFAULT
    if cfg.max_duration is not None:
        seconds = parse_duration(cfg.max_duration, "cloud_storage_config.max_duration")
        if not MAX_DURATION_MIN <= seconds <= MAX_DURATION_MAX:
            raise InvalidArgument("Invalid cloud_storage_config.max_duration: must be between 1 and 10 minutes.")
    if cfg.max_bytes and not MAX_BYTES_MIN <= cfg.max_bytes <= MAX_BYTES_MAX:
        raise InvalidArgument("Invalid cloud_storage_config.max_bytes: must be between 1 KB and 10 GiB.")
    if cfg.max_bytes < 0 or cfg.max_messages < 0 or 0 < cfg.max_messages < MAX_MESSAGES_MIN:
        raise InvalidArgument("Invalid cloud_storage_config.max_messages: must be at least 1000.")
    return Settings(cfg.bucket, cfg.filename_prefix, cfg.filename_suffix,
                    cfg.filename_datetime_format or DEFAULT_DATETIME_FORMAT, cfg.avro_config, seconds,
                    cfg.max_bytes, cfg.max_messages, cfg.service_account_email.strip().lower())


def normalized(cfg: CloudStorageConfig) -> CloudStorageConfig:
    """The config as stored: text_config set when neither format is (Google reports textConfig then)."""
    if cfg.text_config is None and cfg.avro_config is None:
        return cfg.model_copy(update={"text_config": TextConfig()})
    return cfg


def check_datetime_format(fmt: str) -> None:
    """Only the tokens YYYY MM DD hh mm ss Z (each at most once) and the delimiters ``- _ : / T .`` and space."""
    if not fmt:
        return
    seen = _TOKEN_RE.findall(fmt)
    rest = _TOKEN_RE.sub("", fmt)
    if set(rest) - _DELIMITERS or len(seen) != len(set(seen)) or not seen:
        raise InvalidArgument(f"Invalid cloud_storage_config.filename_datetime_format {fmt!r}: use YYYY, MM, DD, "
                              "hh, mm, ss and Z (each at most once) with the delimiters - _ : / T . and space.")
    if fmt.endswith("/"):
        raise InvalidArgument("Invalid cloud_storage_config.filename_datetime_format: must not end in \"/\".")


def format_datetime(fmt: str, epoch: float) -> str:
    t = time.gmtime(epoch)
    values = {"YYYY": f"{t.tm_year:04d}", "MM": f"{t.tm_mon:02d}", "DD": f"{t.tm_mday:02d}",
              "hh": f"{t.tm_hour:02d}", "mm": f"{t.tm_min:02d}", "ss": f"{t.tm_sec:02d}", "Z": "+00:00"}
    return _TOKEN_RE.sub(lambda m: values[m.group(0)], fmt or DEFAULT_DATETIME_FORMAT)


def unique_part(subscription: str, message_ids: Sequence[str]) -> str:
    """A UUID for the batch: the same messages give the same one (a retried batch overwrites its object)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, subscription + "\n" + "\n".join(sorted(message_ids))))


def object_name(s: Settings, epoch: float, unique: str) -> str:
    return f"{s.prefix}{format_datetime(s.datetime_format, epoch)}_{unique}{s.suffix}"


@dataclass
class Message:
    """One message as a file records it."""

    message_id: str
    publish_time: float  # epoch seconds
    data: bytes
    attributes: dict[str, str] = field(default_factory=dict)
    ordering_key: str = ""


def text_file(messages: Sequence[Message]) -> bytes:
    """Google's text format: the data of each message, separated by newlines."""
    return b"\n".join(m.data for m in messages)


def avro_file(messages: Sequence[Message], config: AvroConfig, subscription: str,
              topic_schema: dict[str, Any] | None = None, decoded: Sequence[Any] | None = None) -> bytes:
    """An Avro object container file of Google's records. With ``topic_schema`` (useTopicSchema, the topic's
    parsed Avro schema) ``decoded`` holds each message's data decoded with it."""
    data: Sequence[Any] = [m.data for m in messages] if topic_schema is None or decoded is None else decoded
    if config.write_metadata:
        schema = metadata_schema("bytes" if topic_schema is None else topic_schema)
        records: list[Any] = [{
            "subscription_name": subscription, "message_id": m.message_id,
            "publish_time": round(m.publish_time * 1_000_000),
            "attributes": {**m.attributes, **({"ordering_key": m.ordering_key} if m.ordering_key else {})},
            "data": d} for m, d in zip(messages, data, strict=True)]
    elif topic_schema is not None:
        schema, records = topic_schema, list(data)
    else:
        schema, records = DATA_ONLY_SCHEMA, [{"data": d} for d in data]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    return out.getvalue()


def file_bytes(s: Settings, messages: Sequence[Message], subscription: str,
               topic_schema: dict[str, Any] | None = None, decoded: Sequence[Any] | None = None) -> bytes:
    if s.avro is None:
        return text_file(messages)
    return avro_file(messages, s.avro, subscription, topic_schema, decoded)


@functools.lru_cache(maxsize=64)
def _parsed(definition: str) -> Any:
    return fastavro.parse_schema(json.loads(definition))


def topic_schema(definition: str) -> dict[str, Any]:
    """The topic's Avro schema as a file's writer schema (useTopicSchema)."""
    parsed: dict[str, Any] = json.loads(definition)
    return parsed


def decode_avro(definition: str, encoding: str, data: bytes) -> Any:
    """A message's data decoded with the topic's Avro schema revision in the topic's encoding (JSON or BINARY);
    ValueError when it does not decode."""
    parsed = _parsed(definition)
    try:
        if encoding == "BINARY":
            buf = io.BytesIO(data)
            value = fastavro.schemaless_reader(buf, parsed, None)
            if buf.tell() != len(data):
                raise ValueError("bytes follow the Avro value")
            return value
        return next(iter(fastavro.json_reader(io.StringIO(data.decode("utf-8")), parsed)))
    except ValueError:
        raise
    except Exception as exc:  # fastavro raises many kinds (EOFError, KeyError, StopIteration, ...)
        raise ValueError(f"not Avro of the topic's schema ({type(exc).__name__})") from None


def batching_window(s: Settings) -> int:
    """The event source mapping's MaximumBatchingWindowInSeconds: maxDuration, at most Lambda's 300 s."""
    return int(min(s.max_seconds, LAMBDA_MAX_WINDOW))


def batch_size(s: Settings) -> int:
    """The mapping's BatchSize: maxMessages (default: Lambda's maximum), at most 10,000."""
    return min(s.max_messages or LAMBDA_MAX_BATCH, LAMBDA_MAX_BATCH)


def batch_full(s: Settings, count: int, size: int) -> bool:
    """Whether a batch of ``count`` messages of ``size`` bytes of data must be written now."""
    return bool((s.max_messages and count >= s.max_messages) or (s.max_bytes and size >= s.max_bytes))
