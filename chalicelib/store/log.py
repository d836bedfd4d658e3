"""The topic's message log: one item per publish request in DynamoDB, its raw bytes in the item itself (small
requests) or in an S3 object (the rest)."""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.errors import Unavailable
from chalicelib.core.log_keys import BODY, partition_key
from chalicelib.core.records import LogEntry
from chalicelib.core.replay import archive_layout as layout
from chalicelib.core.timefmt import parse_timestamp
from chalicelib.store import archive, aws
from chalicelib.store.errors import aws_errors

if TYPE_CHECKING:
    from chalicelib.store.aws import Item

_MISSING = ("NoSuchKey", "404")
FANNED_OUT = "fo"  # the log item's mark: publish enqueued it for every subscription
# An item publish did not fan out carries these until the stream handler (or the maintenance catch-up) has:
# the sparse index ``unfanned`` over them is how the catch-up finds what an outage of fan-out left behind.
UNFANNED_SHARD, UNFANNED_SINCE = "uf", "ufa"
UNFANNED_INDEX = "unfanned"
UNFANNED_SHARDS = 4  # index partitions, so that a burst of wide-topic publishes spreads its index writes
def unfanned_shard(request_id: str) -> str:
    return str(zlib.crc32(request_id.encode()) % UNFANNED_SHARDS)


def entry_item(entry: LogEntry) -> Item:
    """The messages table's item of a log entry (attribute names: docs/storage.md)."""
    item: Item = {
        "topic": {"S": partition_key(entry.topic, entry.shard)},
        "rid": {"S": entry.request_id},
        "key": {"S": entry.key},
        "bs": {"N": str(entry.body_start)},
        "n": {"N": str(entry.count)},
        "bytes": {"N": str(entry.size)},
        "pt": {"S": entry.publish_time},
        "ttl": {"N": str(entry.expires)},
    }
    if entry.fanned:
        item[FANNED_OUT] = {"BOOL": True}
    else:
        item[UNFANNED_SHARD] = {"S": unfanned_shard(entry.request_id)}
        item[UNFANNED_SINCE] = {"N": str(int(parse_timestamp(entry.publish_time, "publishTime")))}
    if entry.inline is not None:
        item[BODY] = {"B": entry.inline}
    return item


def entry_from_item(item: Mapping[str, Mapping[str, Any]]) -> LogEntry:
    """A log entry from its item, as GetItem returns it or as a stream record's ``NewImage`` carries it."""
    topic, _, shard = item["topic"]["S"].partition("#")
    return LogEntry(
        topic=topic,
        request_id=item["rid"]["S"],
        key=item["key"]["S"],
        body_start=int(item["bs"]["N"]),
        count=int(item["n"]["N"]),
        size=int(item["bytes"]["N"]),
        publish_time=item["pt"]["S"],
        expires=int(item["ttl"]["N"]),
        fanned=bool(item.get(FANNED_OUT, {}).get("BOOL", False)),
        inline=_binary(item[BODY]["B"]) if BODY in item else None,
        shard=int(shard) if shard else 0,
    )


def _binary(value: Any) -> bytes:
    """A binary attribute's bytes: boto3 hands them over as bytes, a Lambda event (stream record) as base64."""
    return bytes(value) if isinstance(value, (bytes, bytearray)) else base64.b64decode(value)


class MessageLog:
    def __init__(self, config: Config) -> None:
        self._s3 = aws.s3(config)
        self._ddb = aws.dynamodb(config)
        self._bucket = config.bucket
        self._table = config.messages_table

    def append(self, entry: LogEntry, blob: bytes) -> None:
        """Store the object first, then the log item: the stream only ever points at stored bytes."""
        self.put_object(entry, blob)
        self.put_entry(entry)

    def put_object(self, entry: LogEntry, blob: bytes) -> None:
        """The request's S3 object; nothing for a request whose log item holds its bytes."""
        if entry.logged_inline:
            return
        with aws_errors("Publish (S3 PutObject)"):
            self._s3.put_object(Bucket=self._bucket, Key=entry.key, Body=blob)

    def put_entry(self, entry: LogEntry) -> None:
        with aws_errors("Publish (DynamoDB PutItem)"):
            self._ddb.put_item(TableName=self._table, Item=entry_item(entry))

    def mark_fanned(self, entry: LogEntry) -> None:
        """The entry's messages are in every subscription's queue: drop it from the unfanned index (an item that
        expired meanwhile stays gone)."""
        try:
            with aws_errors("Fan-out (DynamoDB UpdateItem)"):  # a failed condition passes through as ClientError
                self._ddb.update_item(
                    TableName=self._table, Key={"topic": {"S": partition_key(entry.topic, entry.shard)},
                                                "rid": {"S": entry.request_id}},
                    UpdateExpression="SET #fo = :yes REMOVE #uf, #ufa", ConditionExpression="attribute_exists(rid)",
                    ExpressionAttributeNames={"#fo": FANNED_OUT, "#uf": UNFANNED_SHARD, "#ufa": UNFANNED_SINCE},
                    ExpressionAttributeValues={":yes": {"BOOL": True}})
        except ClientError:
            pass  # expired (TTL) or deleted with its topic: nothing is left to fan out

    def unfanned(self, published_before: float, limit: int) -> Iterator[LogEntry]:
        """Up to ``limit`` entries not yet fanned out that were published at or before ``published_before`` (epoch
        seconds), oldest first within each index shard."""
        left = limit
        for shard in range(UNFANNED_SHARDS):
            start: dict[str, Any] | None = None
            while left > 0:
                args: dict[str, Any] = {
                    "TableName": self._table, "IndexName": UNFANNED_INDEX, "Limit": min(left, 100),
                    "KeyConditionExpression": "#uf = :shard AND #ufa <= :before",
                    "ExpressionAttributeNames": {"#uf": UNFANNED_SHARD, "#ufa": UNFANNED_SINCE},
                    "ExpressionAttributeValues": {":shard": {"S": str(shard)},
                                                  ":before": {"N": str(int(published_before))}}}
                if start:
                    args["ExclusiveStartKey"] = start
                with aws_errors("Fan-out catch-up (DynamoDB Query)"):
                    page = self._ddb.query(**args)
                for item in page.get("Items", []):
                    left -= 1
                    yield entry_from_item(item)
                start = page.get("LastEvaluatedKey")
                if not start:
                    break

    def read_blob(self, entry: LogEntry) -> bytes | None:
        """A publish request's raw bytes wherever they are (its log item, else its S3 object), or None once the
        object is gone (compacted into the archive)."""
        if entry.inline is not None:
            return entry.inline
        return self.read_object(entry.key)

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
        return {mid: body[0] for mid, body in self.read_archived_messages(key, message_ids).items()}

    def read_archived_messages(self, key: str, message_ids: list[str]) -> dict[str, archive.Body]:
        """As :meth:`read_archived`, with each message's (data, attributes, ordering key)."""
        if not message_ids:
            return {}
        try:
            topic = layout.parse_raw_key(key).topic
        except ValueError:
            return {}
        try:
            with aws_errors("S3 GetObject (archive)"):
                return archive.read_archived_bodies(self._s3, self._bucket, topic, message_ids)
        except ImportError as exc:  # pyarrow missing from this deployment
            raise Unavailable(f"The archive of {topic} cannot be read here ({exc.name} is not installed).") from exc
