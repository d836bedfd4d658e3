"""Import topics' AWS side: the sources (Kinesis streams and consumers, S3 buckets and objects, MSK clusters) read
as Metro's role or as a role it assumes, and the ingestion checkpoints that make a source's records publish once
(docs/import.md).

Checkpoints live in the leases table, one item per (topic, source, partition): ``sub`` = ``ingest#{topic}``,
``lease`` = ``{source}#{partition}`` (a stream ARN and shard id, a cluster ARN and topic-partition), with
``seq`` the last position published and, while a batch is being published, ``prid``/``pfirst``/``plast``: the
request id that batch publishes under and the positions it covers. An S3 object is a partition of its own
(``s3://{bucket}#{key}``, positions 1..n), so its finished checkpoint says it was read. The registry of import
topics is the partition ``ingest-topics`` (one item per topic: its source's kind and name).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.log_keys import log_shard, partition_key
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, code_of
from chalicelib.store.ingest_mappings import IngestMappings

log = logging.getLogger(__name__)

DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "InvalidClientTokenId",
          "ExpiredToken", "Forbidden", "403")
MISSING = ("ResourceNotFoundException", "NoSuchBucket", "NotFound", "404", "NotFoundException")
OK, PERMISSION_DENIED, NOT_FOUND = "ok", "denied", "missing"


_REGISTRY = "ingest-topics"


def _ingest_pk(topic: str) -> str:
    return f"ingest#{topic}"


@dataclass(frozen=True)
class Checkpoint:
    position: str | None = None  # the last position published
    pending_rid: str = ""  # a batch under way: its request id and the positions it covers
    pending_first: str = ""
    pending_last: str = ""


@dataclass(frozen=True)
class StoredObject:
    key: str
    created: float  # epoch seconds (S3's LastModified: an object is never modified, only replaced)
    size: int


class IngestionStore:
    def __init__(self, config: Config) -> None:
        self._config = config
        self._ddb = aws.dynamodb(config)
        self._table = config.leases_table
        self._messages = config.messages_table
        self.mappings = IngestMappings(config)

    # -- clients, as Metro's role or an assumed one ------------------------------------------------------------
    def client(self, service: str, role: str = "") -> Any:
        return aws.client(service, self._config) if not role else self._assumed(service, role)

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one store per process; credentials last an hour
    def _assumed(self, service: str, role: str) -> Any:
        with aws_errors("AssumeRole"):
            creds = aws.client("sts", self._config).assume_role(
                RoleArn=role, RoleSessionName="metro-ingestion", DurationSeconds=3600)["Credentials"]
        session: Any = boto3.session.Session(aws_access_key_id=creds["AccessKeyId"],
                                        aws_secret_access_key=creds["SecretAccessKey"],
                                        aws_session_token=creds["SessionToken"])
        built = session.client(service, region_name=self._config.region, endpoint_url=self._config.endpoint_url,
                               config=BotoConfig(retries={"mode": "standard", "max_attempts": 5}))
        return aws.instrument(built)

    def _probe(self, call: Any, **kwargs: Any) -> str:
        """OK, PERMISSION_DENIED or NOT_FOUND for a describe call (an outage is raised: it says nothing)."""
        try:
            with aws_errors("ingestion source check", allow=DENIED + MISSING):
                call(**kwargs)
            return OK
        except ClientError as exc:
            return PERMISSION_DENIED if code_of(exc) in DENIED else NOT_FOUND

    # -- source checks ----------------------------------------------------------------------------------------
    def check_stream(self, stream_arn: str, role: str = "") -> str:
        try:
            kinesis = self.client("kinesis", role)
        except Exception:  # the role cannot be assumed
            return PERMISSION_DENIED
        return self._probe(kinesis.describe_stream_summary, StreamARN=stream_arn)

    def check_consumer(self, consumer_arn: str, role: str = "") -> str:
        try:
            kinesis = self.client("kinesis", role)
        except Exception:
            return PERMISSION_DENIED
        return self._probe(kinesis.describe_stream_consumer, ConsumerARN=consumer_arn)

    def check_bucket(self, bucket: str, role: str = "") -> str:
        return self._probe(self.client("s3", role).head_bucket, Bucket=bucket)

    def check_cluster(self, cluster_arn: str, role: str = "") -> str:
        try:
            kafka = self.client("kafka", role)
        except Exception:
            return PERMISSION_DENIED
        return self._probe(kafka.describe_cluster_v2, ClusterArn=cluster_arn)

    # -- S3 objects ---------------------------------------------------------------------------------------------
    def objects(self, bucket: str, after: float = 0.0) -> Iterator[StoredObject]:
        """Every object of ``bucket`` created at or after ``after`` (one ListObjectsV2 page per 1,000)."""
        s3 = self.client("s3")
        args: dict[str, Any] = {"Bucket": bucket}
        while True:
            with aws_errors("ListObjectsV2 (ingestion)"):
                resp = s3.list_objects_v2(**args)
            for o in resp.get("Contents", []):
                created = o["LastModified"].timestamp()
                if created >= after:
                    yield StoredObject(o["Key"], created, int(o.get("Size", 0)))
            if not resp.get("IsTruncated"):
                return
            args["ContinuationToken"] = resp["NextContinuationToken"]

    def read_object(self, bucket: str, key: str) -> bytes | None:
        try:
            with aws_errors("GetObject (ingestion)", allow=("NoSuchKey",)):
                return bytes(self.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
        except ClientError:
            return None

    # -- the import topics ---------------------------------------------------------------------------------------
    def register(self, topic: str, kind: str, source: str) -> None:
        """List ``topic`` among the import topics (``kind``: kinesis, storage or msk; ``source``: the stream ARN,
        bucket or ``{cluster ARN} {Kafka topic}``), for the ingest function, the scans and the pumps."""
        with aws_errors("ingestion registry (PutItem)"):
            self._ddb.put_item(TableName=self._table, Item={"sub": {"S": _REGISTRY}, "lease": {"S": topic},
                                                            "kind": {"S": kind}, "src": {"S": source}})

    def unregister(self, topic: str) -> None:
        with aws_errors("ingestion registry (DeleteItem)"):
            self._ddb.delete_item(TableName=self._table, Key={"sub": {"S": _REGISTRY}, "lease": {"S": topic}})

    def registered(self) -> list[tuple[str, str, str]]:
        """Every import topic, its source's kind and the source (one Query page per 1 MB)."""
        out: list[tuple[str, str, str]] = []
        args: dict[str, Any] = {"TableName": self._table, "KeyConditionExpression": "#s = :pk", "ConsistentRead": True,
                                "ExpressionAttributeNames": {"#s": "sub"},
                                "ExpressionAttributeValues": {":pk": {"S": _REGISTRY}}}
        while True:
            with aws_errors("ingestion registry (Query)"):
                resp = self._ddb.query(**args)
            out.extend((i["lease"]["S"], i.get("kind", {}).get("S", ""), i.get("src", {}).get("S", ""))
                       for i in resp.get("Items", []))
            if not resp.get("LastEvaluatedKey"):
                return out
            args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    # -- checkpoints --------------------------------------------------------------------------------------------
    def _key(self, topic: str, source: str, partition: str) -> dict[str, Any]:
        return {"sub": {"S": _ingest_pk(topic)}, "lease": {"S": f"{source}#{partition}"}}

    def checkpoint(self, topic: str, source: str, partition: str) -> Checkpoint:
        with aws_errors("ingestion checkpoint (GetItem)"):
            item = self._ddb.get_item(TableName=self._table, Key=self._key(topic, source, partition),
                                      ConsistentRead=True).get("Item") or {}
        return Checkpoint(item["seq"]["S"] if "seq" in item else None,
                          item.get("prid", {}).get("S", ""), item.get("pfirst", {}).get("S", ""),
                          item.get("plast", {}).get("S", ""))

    def begin(self, topic: str, source: str, partition: str, seen: Checkpoint, rid: str, first: str,
              last: str) -> bool:
        """Record the batch about to be published, if the checkpoint is still ``seen``; False if it moved."""
        cond, values = self._unchanged(seen)
        try:
            with aws_errors("ingestion checkpoint (begin)", allow=("ConditionalCheckFailedException",)):
                self._ddb.update_item(
                    TableName=self._table, Key=self._key(topic, source, partition),
                    UpdateExpression="SET prid = :rid, pfirst = :first, plast = :last",
                    ConditionExpression=cond,
                    ExpressionAttributeValues={**values, ":rid": {"S": rid}, ":first": {"S": first},
                                               ":last": {"S": last}})
            return True
        except ClientError:
            return False

    def commit(self, topic: str, source: str, partition: str, rid: str, position: str) -> bool:
        """Move the checkpoint to ``position`` and end the batch ``rid``; False if another run ended it."""
        try:
            with aws_errors("ingestion checkpoint (commit)", allow=("ConditionalCheckFailedException",)):
                self._ddb.update_item(
                    TableName=self._table, Key=self._key(topic, source, partition),
                    UpdateExpression="SET seq = :pos REMOVE prid, pfirst, plast", ConditionExpression="prid = :rid",
                    ExpressionAttributeValues={":pos": {"S": position}, ":rid": {"S": rid}})
            return True
        except ClientError:
            return False

    def finish_empty(self, topic: str, source: str, partition: str) -> None:
        """Mark a partition with nothing to publish (an empty or unreadable object) as read."""
        with aws_errors("ingestion checkpoint (PutItem)"):
            self._ddb.put_item(TableName=self._table, Item={**self._key(topic, source, partition),
                                                            "seq": {"S": "0"}})

    @staticmethod
    def _unchanged(seen: Checkpoint) -> tuple[str, dict[str, Any]]:
        values: dict[str, Any] = {}
        parts = []
        if seen.position is None:
            parts.append("attribute_not_exists(seq)")
        else:
            parts.append("seq = :seen")
            values[":seen"] = {"S": seen.position}
        if seen.pending_rid:
            parts.append("prid = :prid")
            values[":prid"] = {"S": seen.pending_rid}
        else:
            parts.append("attribute_not_exists(prid)")
        return " AND ".join(parts), values

    def logged(self, topic: str, rid: str) -> bool:
        """Whether the messages table holds the publish request ``rid`` of ``topic`` (written last by publish): in
        the topic's ordered partition or in the one the id hashes to (a GetItem each, only when a run recovers)."""
        for ordered in (False, True):
            with aws_errors("ingestion publish check (GetItem)"):
                item = self._ddb.get_item(
                    TableName=self._messages, ConsistentRead=True, ProjectionExpression="rid",
                    Key={"topic": {"S": partition_key(topic, log_shard(rid, ordered))}, "rid": {"S": rid}})
            if item.get("Item"):
                return True
        return False
