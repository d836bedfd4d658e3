"""A topic's retained messages read back in publish order, in batches (seek, snapshots).

The messages table is queried by time range, every partition of the topic's log, merged by request id (one
Query page holds hundreds of publish requests); a small request's bytes come with its log item, every other
request's raw object is read with one GET (on a thread pool), and the requests whose object compaction
already deleted are read from the Parquet archive, one manifest and the matching files per hour. Log items
past their ``ttl`` are skipped: DynamoDB deletes expired items only eventually (and moto never).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chalicelib.config import Config
from chalicelib.core import ids, payload
from chalicelib.core.log_keys import log_partitions
from chalicelib.core.records import LogEntry
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors
from chalicelib.store.log import MessageLog, entry_from_item
from chalicelib.store.workers import Workers

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

BATCH_ENTRIES = 100  # publish requests read per batch (their objects fetched concurrently)
PAGE_ENTRIES = 500  # publish requests per page of the merged partitions


@dataclass(frozen=True)
class Retained:
    """One retained message: ``offset`` is where its body starts in the raw object (0 once archived: a body
    too large to travel inline is then found in the archive again at delivery)."""

    message: payload.StoredMessage
    offset: int


@dataclass(frozen=True)
class RequestMessages:
    entry: LogEntry
    messages: list[Retained]


class TopicHistory:
    def __init__(self, config: Config, log: MessageLog, workers: Workers) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.messages_table
        self._log = log
        self._workers = workers

    def entries(self, topic: str, from_ms: int, now: float) -> Iterator[list[LogEntry]]:
        """The topic's unexpired log entries published from ``from_ms`` on, oldest first, in pages: every
        partition of the topic's log read a Query page at a time, merged by request id."""
        parts = [self._partition(key, from_ms, now) for key in log_partitions(topic)]
        merged = heapq.merge(*parts, key=lambda e: e.request_id)
        while page := list(itertools.islice(merged, PAGE_ENTRIES)):
            yield page

    def _partition(self, key: str, from_ms: int, now: float) -> Iterator[LogEntry]:
        args: QueryInputTypeDef = {
            "TableName": self._table, "KeyConditionExpression": "topic = :t AND rid >= :from",
            "FilterExpression": "#ttl >= :now", "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": {":t": {"S": key}, ":from": {"S": f"{max(from_ms, 0):013d}"},
                                          ":now": {"N": str(int(now))}},
        }
        while True:
            with aws_errors("Query (topic history)"):
                resp = self._ddb.query(**args)
            yield from (entry_from_item(item) for item in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return
            args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def messages(self, topic: str, from_ms: int, now: float, after: str = "",
                 limit: int = 0) -> Iterator[list[RequestMessages]]:
        """Every retained message published from ``from_ms`` on (of requests after the request id ``after``), in
        batches of publish requests, in order; with ``limit``, only the requests up to the one that brings the
        messages read to ``limit`` (their raw objects are all that is read)."""
        budget = limit
        for page in self.entries(topic, from_ms, now):
            wanted = [e for e in page if e.request_id > after]
            if limit:
                wanted = _within(wanted, budget)
                budget -= sum(e.count for e in wanted)
            for start in range(0, len(wanted), BATCH_ENTRIES):
                yield self.read(wanted[start : start + BATCH_ENTRIES])
            if limit and budget <= 0:
                return

    def read(self, entries: list[LogEntry]) -> list[RequestMessages]:
        """The messages of these publish requests: from their log items or raw objects (on threads), the rest from
        the archive."""
        blobs = self._workers.map(aws.in_callers_part(self._log.read_blob), entries)
        out: list[RequestMessages] = []
        for entry, blob in zip(entries, blobs):
            if blob is None:
                out.append(RequestMessages(entry, self._archived(entry)))
                continue
            header, stored = payload.decode(blob)
            out.append(RequestMessages(entry, [Retained(m, e.offset) for m, e in zip(stored, header.entries)]))
        return out

    def _archived(self, entry: LogEntry) -> list[Retained]:
        """A compacted request's messages (those the archive still holds), in their publish order."""
        wanted = [ids.message_id(entry.request_id, i) for i in range(entry.count)]
        found = self._log.read_archived_messages(entry.key, wanted)
        return [Retained(payload.StoredMessage(m, *found[m]), 0) for m in wanted if m in found]


def _within(entries: list[LogEntry], budget: int) -> list[LogEntry]:
    """The first entries, up to and including the one whose messages reach ``budget``."""
    total = 0
    for i, entry in enumerate(entries):
        total += entry.count
        if total >= budget:
            return entries[: i + 1]
    return entries
