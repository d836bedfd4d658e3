"""The topic's message log: raw publish objects in S3 and one metadata item per request in DynamoDB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core import archive_layout as layout
from chalicelib.core.errors import Unavailable
from chalicelib.store import archive, aws
from chalicelib.store.errors import aws_errors

_MISSING = ("NoSuchKey", "404")


@dataclass(frozen=True)
class LogEntry:
    """One publish request as the messages table records it (see docs/storage.md)."""

    topic: str
    request_id: str
    key: str
    body_start: int
    count: int
    size: int
    publish_time: str
    expires: int
    fanned: bool = False  # publish already enqueued the messages for every subscription

    def to_item(self) -> dict[str, Any]:
        return {
            "topic": {"S": self.topic},
            "rid": {"S": self.request_id},
            "key": {"S": self.key},
            "bs": {"N": str(self.body_start)},
            "n": {"N": str(self.count)},
            "bytes": {"N": str(self.size)},
            "pt": {"S": self.publish_time},
            "ttl": {"N": str(self.expires)},
            **({"fo": {"BOOL": True}} if self.fanned else {}),
        }

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> LogEntry:
        return cls(
            topic=item["topic"]["S"],
            request_id=item["rid"]["S"],
            key=item["key"]["S"],
            body_start=int(item["bs"]["N"]),
            count=int(item["n"]["N"]),
            size=int(item["bytes"]["N"]),
            publish_time=item["pt"]["S"],
            expires=int(item["ttl"]["N"]),
            fanned=bool(item.get("fo", {}).get("BOOL", False)),
        )


class MessageLog:
    def __init__(self, config: Config) -> None:
        self._s3 = aws.client("s3", config)
        self._ddb = aws.client("dynamodb", config)
        self._bucket = config.bucket
        self._table = config.messages_table

    def append(self, entry: LogEntry, blob: bytes) -> None:
        """Store the object first, then the log item: the stream only ever points at stored bytes."""
        self.put_object(entry, blob)
        self.put_entry(entry)

    def put_object(self, entry: LogEntry, blob: bytes) -> None:
        with aws_errors("Publish (S3 PutObject)"):
            self._s3.put_object(Bucket=self._bucket, Key=entry.key, Body=blob)

    def put_entry(self, entry: LogEntry) -> None:
        with aws_errors("Publish (DynamoDB PutItem)"):
            self._ddb.put_item(TableName=self._table, Item=entry.to_item())

    def read_object(self, key: str) -> bytes | None:
        """The whole object, or None once it is gone (compacted into the archive)."""
        try:
            with aws_errors("S3 GetObject", allow=_MISSING):
                return bytes(self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read())
        except ClientError:
            return None

    def read_range(self, key: str, start: int, end: int) -> bytes | None:
        """Bytes ``[start, end)`` of an object, or None once it is gone."""
        if end <= start:
            return b""
        try:
            with aws_errors("S3 GetObject (range)", allow=_MISSING):
                resp = self._s3.get_object(Bucket=self._bucket, Key=key, Range=f"bytes={start}-{end - 1}")
                return bytes(resp["Body"].read())
        except ClientError:
            return None

    def read_archived(self, key: str, message_ids: list[str]) -> dict[str, bytes]:
        """Bodies of messages of the raw object ``key`` after compaction deleted it: read from the
        Parquet archive (the hour's manifest, then only the files whose id range can hold an id).
        Ids the archive does not hold (past retention) are absent from the result."""
        if not message_ids:
            return {}
        try:
            topic = layout.parse_raw_key(key).topic
        except ValueError:
            return {}
        try:
            with aws_errors("S3 GetObject (archive)"):
                found = archive.read_archived_bodies(self._s3, self._bucket, topic, message_ids)
        except ImportError as exc:  # pyarrow missing from this deployment
            raise Unavailable(f"The archive of {topic} cannot be read here ({exc.name} is not installed).") from exc
        return {mid: body[0] for mid, body in found.items()}
