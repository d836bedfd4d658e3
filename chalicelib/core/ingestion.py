"""Import topics (pure): the ARNs a source names, Google's object glob, source records as messages, Google's
``IngestionFailureEvent`` and the platform-log severity that lets it through (docs/import.md).

The readers of Cloud Storage objects (text, Avro, Pub/Sub Avro) are in core/ingestion_objects.py.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.messages import NewMessage

# --- ARNs ------------------------------------------------------------------------------------------------------
_PARTITION = r"aws(?:-cn|-us-gov|-iso|-iso-b)?"
_STREAM = re.compile(rf"^arn:{_PARTITION}:kinesis:([a-z0-9-]+):(\d{{12}}):stream/([A-Za-z0-9_.-]{{1,128}})$")
_CONSUMER = re.compile(
    rf"^arn:{_PARTITION}:kinesis:([a-z0-9-]+):(\d{{12}}):stream/([A-Za-z0-9_.-]{{1,128}})/consumer/"
    r"([A-Za-z0-9_.-]{1,128})(?::\d+)?$")
_ROLE = re.compile(rf"^arn:{_PARTITION}:iam::(\d{{12}}):role/([\w+=,.@/-]{{1,512}})$")
_CLUSTER = re.compile(
    rf"^arn:{_PARTITION}:kafka:([a-z0-9-]+):(\d{{12}}):cluster/([A-Za-z0-9-]{{1,64}})/([A-Za-z0-9-]+)$")
_KAFKA_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


@dataclass(frozen=True)
class Arn:
    """A parsed ARN: its region, account and the resource's name (a consumer's ``stream/consumer``)."""
    value: str
    region: str
    account: str
    name: str


def stream_arn(value: str) -> Arn:
    m = _STREAM.match(value)
    if not m:
        raise InvalidArgument(f"awsKinesis.streamArn {value!r} is not a Kinesis stream ARN "
                              "(arn:aws:kinesis:REGION:ACCOUNT:stream/NAME)")
    return Arn(value, m.group(1), m.group(2), m.group(3))


def consumer_arn(value: str, stream: Arn) -> Arn:
    m = _CONSUMER.match(value)
    if not m:
        raise InvalidArgument(f"awsKinesis.consumerArn {value!r} is not a Kinesis consumer ARN "
                              "(arn:aws:kinesis:REGION:ACCOUNT:stream/NAME/consumer/CONSUMER:TIMESTAMP)")
    if (m.group(1), m.group(2), m.group(3)) != (stream.region, stream.account, stream.name):
        raise InvalidArgument("awsKinesis.consumerArn must be a consumer of awsKinesis.streamArn")
    return Arn(value, m.group(1), m.group(2), f"{m.group(3)}/{m.group(4)}")


def role_arn(value: str, field_name: str) -> Arn:
    m = _ROLE.match(value)
    if not m:
        raise InvalidArgument(f"{field_name} {value!r} is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)")
    return Arn(value, "", m.group(1), m.group(2))


def cluster_arn(value: str) -> Arn:
    m = _CLUSTER.match(value)
    if not m:
        raise InvalidArgument(f"awsMsk.clusterArn {value!r} is not an MSK cluster ARN "
                              "(arn:aws:kafka:REGION:ACCOUNT:cluster/NAME/UUID)")
    return Arn(value, m.group(1), m.group(2), m.group(3))


def kafka_topic(value: str) -> str:
    if not _KAFKA_TOPIC.match(value):
        raise InvalidArgument(f"awsMsk.topic {value!r} is not a Kafka topic name")
    return value


# --- Google's glob (Cloud Storage matchGlob) ---------------------------------------------------------------------
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Google's matchGlob as a regular expression: ``*`` any characters but ``/``, ``**`` any characters (and
    ``**/`` zero or more whole folders), ``?`` one character but ``/``, ``[abc]``/``[!abc]`` a class, ``{a,b}``
    alternatives. Refuses an unbalanced bracket or brace."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "^") else i + 1)
            if end < 0:
                raise InvalidArgument(f"cloudStorage.matchGlob {pattern!r}: unclosed '['")
            body = pattern[i + 1:end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append(("[^" if negate else "[") + body.replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise InvalidArgument(f"cloudStorage.matchGlob {pattern!r}: unclosed '{{'")
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def glob_matches(pattern: str, name: str) -> bool:
    return not pattern or glob_regex(pattern).match(name) is not None


# --- source records --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceRecord:
    """One record of a source, as the ingest function gets it: its message, where it came from (the dedupe key's
    parts: stream or cluster, shard or topic-partition, sequence number or offset) and its failure details."""
    message: NewMessage
    source: str
    partition: str
    position: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.message.data)


def _ordering_key(key: str) -> str:
    return key if len(key.encode()) <= limits.MAX_ORDERING_KEY_BYTES else ""


def kinesis_records(event: dict[str, Any]) -> list[SourceRecord]:
    """The records of a Lambda Kinesis event: data as it is, the partition key as the ordering key."""
    out = []
    for rec in event.get("Records", []):
        k = rec.get("kinesis", {})
        stream = str(rec.get("eventSourceARN", ""))
        shard = str(rec.get("eventID", "")).partition(":")[0]
        out.append(SourceRecord(
            NewMessage(base64.b64decode(k.get("data", "")), {}, _ordering_key(str(k.get("partitionKey", "")))),
            stream, shard, str(k.get("sequenceNumber", "")),
            {"stream_arn": stream, "partition_key": str(k.get("partitionKey", "")),
             "sequence_number": str(k.get("sequenceNumber", ""))}))
    return out


def kinesis_event(stream: str, shard: str, records: list[dict[str, Any]], region: str) -> dict[str, Any]:
    """Lambda's Kinesis event for records as GetRecords returns them (the local pump plays the mapping)."""
    return {"Records": [{
        "kinesis": {"kinesisSchemaVersion": "1.0", "partitionKey": r["PartitionKey"],
                    "sequenceNumber": r["SequenceNumber"], "data": base64.b64encode(bytes(r["Data"])).decode(),
                    "approximateArrivalTimestamp": _epoch(r.get("ApproximateArrivalTimestamp"))},
        "eventSource": "aws:kinesis", "eventVersion": "1.0", "eventID": f"{shard}:{r['SequenceNumber']}",
        "eventName": "aws:kinesis:record", "awsRegion": region, "eventSourceARN": stream,
    } for r in records]}


def _epoch(value: Any) -> float:
    return float(value.timestamp()) if hasattr(value, "timestamp") else float(value or 0)


def msk_records(event: dict[str, Any]) -> list[SourceRecord]:
    """The records of a Lambda MSK event: value as data, key as ordering key, headers as attributes (values as
    UTF-8 text; a header that is not text is left out)."""
    cluster = str(event.get("eventSourceArn", ""))
    out = []
    for batch in (event.get("records") or {}).values():
        for rec in batch:
            attributes: dict[str, str] = {}
            for header in rec.get("headers") or []:
                for k, v in header.items():
                    try:
                        attributes[str(k)] = bytes(v).decode() if isinstance(v, list) else str(v)
                    except (UnicodeDecodeError, ValueError):
                        continue
            key = base64.b64decode(rec["key"]).decode(errors="replace") if rec.get("key") else ""
            part = f"{rec.get('topic', '')}-{rec.get('partition', 0)}"
            out.append(SourceRecord(
                NewMessage(base64.b64decode(rec.get("value") or ""), attributes, _ordering_key(key)),
                cluster, part, str(rec.get("offset", 0)),
                {"cluster_arn": cluster, "kafka_topic": str(rec.get("topic", "")),
                 "partition_id": str(rec.get("partition", 0)), "offset": str(rec.get("offset", 0))}))
    return out


def position_after(position: str, checkpoint: str | None) -> bool:
    """Whether a sequence number or offset (decimal strings of any length) comes after the checkpoint."""
    if checkpoint is None:
        return True
    return (len(position), position) > (len(checkpoint), checkpoint)


# --- failure events and platform logs --------------------------------------------------------------------------
SEVERITIES = ("SEVERITY_UNSPECIFIED", "DISABLED", "DEBUG", "INFO", "WARNING", "ERROR")
FAILURE_SEVERITY = "WARNING"  # the level of an ingestion failure's platform log


def severity_name(value: str | int | None) -> str:
    if value is None or value == "":
        return SEVERITIES[0]
    if isinstance(value, int):
        if 0 <= value < len(SEVERITIES):
            return SEVERITIES[value]
    elif value in SEVERITIES:
        return value
    raise InvalidArgument(f"platformLogsSettings.severity {value!r} is not one of {', '.join(SEVERITIES)}")


def failure_logged(severity: str | int | None) -> bool:
    """Google's default (unspecified) and DISABLED write no platform logs; otherwise a failure is logged when its
    level reaches the setting."""
    name = severity_name(severity)
    if name in SEVERITIES[:2]:
        return False
    return SEVERITIES.index(FAILURE_SEVERITY) >= SEVERITIES.index(name)


SCHEMA, TRANSFORM, API, AVRO = ("schema_violation_reason", "message_transformation_failure_reason",
                                "api_violation_reason", "avro_failure_reason")
_FAILURE_FIELD = {"kinesis": "aws_kinesis_failure", "msk": "aws_msk_failure", "storage": "cloud_storage_failure"}


def failure_event(topic: str, kind: str, error: str, reason: str, details: dict[str, Any]) -> dict[str, Any]:
    """Google's IngestionFailureEvent (proto field names) for one record of a source kind (kinesis, msk, storage)."""
    return {"topic": topic, "error_message": error, _FAILURE_FIELD[kind]: {**details, reason: {}}}


def reason_of(error: str) -> str:
    """Which of Google's reasons a refusal's message names: a transform's, else a schema's."""
    lowered = error.lower()
    return TRANSFORM if "transform" in lowered or "udf" in lowered else SCHEMA
