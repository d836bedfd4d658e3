"""The subscriptions' seeks (core/replay/seek_jobs.SeekJob): one item per subscription in the resources table.

Item: pk=``seeks``, sk=``{subscription name}``; the job's fields, and ``ttl`` (DynamoDB TTL) a week after the
seek ended. One partition holds every seek, so the maintenance schedule lists the running ones with one Query.
Every change after the first write is conditioned on the item's ``seek_id`` (a later seek replaced it: the write
fails) and, for a worker, on the lease it holds, so two workers never both advance a cursor.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.replay.seek_jobs import SeekJob
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, client_error, code_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

    from chalicelib.store.aws import Item

PARTITION = "seeks"
KEEP_ENDED_SECONDS = 7 * 24 * 3600
_FIELDS = [f.name for f in dataclasses.fields(SeekJob)]


def _key(subscription: str) -> Item:
    return {"pk": {"S": PARTITION}, "sk": {"S": subscription}}


def _item(job: SeekJob) -> Item:
    item: Item = {**_key(job.subscription), "seek_id": {"S": job.seek_id},
                  "job": {"S": json.dumps(dataclasses.asdict(job))}}
    if not job.running:
        item["ttl"] = {"N": str(int(job.finished + KEEP_ENDED_SECONDS))}
    return item


def _job(item: Item) -> SeekJob:
    fields: dict[str, Any] = json.loads(item["job"]["S"])
    fields["retire_urls"] = tuple(fields.get("retire_urls", ()))
    return SeekJob(**{k: v for k, v in fields.items() if k in _FIELDS})


class SeekJobStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table

    def start(self, job: SeekJob) -> SeekJob | None:
        """Record ``job`` as the subscription's seek, replacing any other (the later seek wins); returns the
        one it replaced."""
        with aws_errors("Seek (PutItem)"):
            old = self._ddb.put_item(TableName=self._table, Item=_item(job), ReturnValues="ALL_OLD").get("Attributes")
        return _job(old) if old else None

    def get(self, subscription: str) -> SeekJob | None:
        with aws_errors("Seek status (GetItem)"):
            item = self._ddb.get_item(TableName=self._table, Key=_key(subscription), ConsistentRead=True).get("Item")
        return _job(item) if item else None

    def save(self, job: SeekJob, expected: SeekJob | None = None) -> bool:
        """Write ``job`` if it is still the subscription's seek and, with ``expected``, the item is still exactly
        ``expected`` (the worker's lease as it took it); False when a later seek or another worker won."""
        values: Item = {":id": {"S": job.seek_id}}
        args: dict[str, Any] = {"TableName": self._table, "Item": _item(job), "ConditionExpression": "seek_id = :id",
                                "ExpressionAttributeValues": values}
        if expected is not None:
            args["ConditionExpression"] += " AND #job = :read"
            args["ExpressionAttributeNames"] = {"#job": "job"}
            values[":read"] = {"S": json.dumps(dataclasses.asdict(expected))}
        try:
            with aws_errors("Seek (PutItem)"):
                self._ddb.put_item(**args)
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                return False
            raise client_error(exc, "Seek (PutItem)") from exc
        return True

    def claim(self, job: SeekJob, until: float) -> SeekJob | None:
        """Take the lease on ``job`` (as read, with no live lease) until ``until``; None if someone else did."""
        held = dataclasses.replace(job, lease_until=until)
        return held if self.save(held, expected=job) else None

    def guard(self, job: SeekJob) -> TransactWriteItemTypeDef:
        """A transaction item that holds only while ``job`` is still the subscription's seek."""
        return {"ConditionCheck": {"TableName": self._table, "Key": _key(job.subscription),
                                   "ConditionExpression": "seek_id = :id",
                                   "ExpressionAttributeValues": {":id": {"S": job.seek_id}}}}

    def running(self) -> list[SeekJob]:
        """Every running seek (one Query of the seeks' partition; ended ones are filtered out)."""
        jobs: list[SeekJob] = []
        args: dict[str, Any] = {"TableName": self._table, "KeyConditionExpression": "pk = :p",
                                "FilterExpression": "attribute_not_exists(#ttl)",
                                "ExpressionAttributeNames": {"#ttl": "ttl"},
                                "ExpressionAttributeValues": {":p": {"S": PARTITION}}}
        while True:
            with aws_errors("Seek (Query)"):
                resp = self._ddb.query(**args)
            jobs.extend(_job(i) for i in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return jobs
            args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
