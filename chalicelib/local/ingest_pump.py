"""The local ingest pump: plays the Kinesis event source mappings of import topics, and the schedule that scans their
S3 buckets (docs/import.md).

For every stream an import topic reads it lists the shards and reads each with GetShardIterator and GetRecords,
remembering its iterator; each batch goes to the ingest handler in Lambda's Kinesis event shape, and a batch item
failure makes it read the shard again from that record, after a backoff, as the mapping does. A new pump starts
each shard after the oldest checkpoint of the topics that read it (or at the stream's start): records it reads
again are skipped by those checkpoints, so a restart publishes nothing twice. Every ``scan_seconds`` it runs the
Cloud Storage scan. No Kafka broker runs here: MSK import topics are not pumped.

Its stream reads are what the deployed mapping does with the ingest function's role (``acting_as("ingest")``);
finding the import topics is the pump's own book-keeping, left unlabelled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from chalicelib.config import Config
from chalicelib.core import ingestion
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.ingestion import IngestionStore

log = logging.getLogger("metro.ingest_pump")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
FUNCTION = "ingest"
IDLE_MAX_SECONDS = 1.0


def _default_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from chalicelib.delivery import event_handlers
    return event_handlers.ingest(event, context)


def _default_scan(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from chalicelib.delivery import event_handlers
    return event_handlers.ingest_scan(event, context)


def _name(stream_arn: str) -> str:
    """The stream's name (moto's iterators lose a stream named by ARN; the pump reads its own account's streams)."""
    return stream_arn.rpartition("stream/")[2]


class IngestPump:
    def __init__(self, config: Config, handler: Handler | None = None, scan: Handler | None = None,
                 interval: float = 0.25, scan_seconds: float = 5.0) -> None:
        self._config = config
        self._handler = handler or _default_handler
        self._scan = scan or _default_scan
        self._interval = interval
        self._scan_seconds = scan_seconds
        self._kinesis = aws.client("kinesis", config)
        self._store = IngestionStore(config)
        self._iterators: dict[tuple[str, str], str] = {}  # (stream ARN, shard) -> the next iterator
        self._stop = threading.Event()
        self._scanned = 0.0

    def _streams(self) -> dict[str, list[str]]:
        """Stream ARN -> the import topics reading it."""
        found: dict[str, list[str]] = {}
        for topic, kind, source in self._store.registered():
            if kind == "kinesis":
                found.setdefault(source.split(" ", maxsplit=1)[0], []).append(topic)
        return found

    def _discover(self, stream: str, topics: list[str]) -> None:
        with acting_as(FUNCTION):
            shards = self._kinesis.list_shards(StreamName=_name(stream))["Shards"]
        for shard in shards:
            sid = shard["ShardId"]
            if (stream, sid) in self._iterators:
                continue
            seen = [self._store.checkpoint(t, stream, sid).position for t in topics]
            args: dict[str, Any] = {"StreamName": _name(stream), "ShardId": sid, "ShardIteratorType": "TRIM_HORIZON"}
            if seen and all(p is not None for p in seen):
                oldest = min((p for p in seen if p is not None), key=lambda p: (len(p), p))
                args.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=oldest)
            with acting_as(FUNCTION):
                self._iterators[(stream, sid)] = self._kinesis.get_shard_iterator(**args)["ShardIterator"]

    def poll_once(self) -> int:
        """Read every shard of every import topic's stream once; returns the records handed to the handler."""
        handled = 0
        streams = self._streams()
        for stream, topics in streams.items():
            try:
                self._discover(stream, topics)
            except Exception as exc:  # a stream deleted or unreadable: its topics' state says so
                log.debug("stream %s: %s", stream, exc)
        for (stream, sid), iterator in list(self._iterators.items()):
            if stream not in streams:
                del self._iterators[(stream, sid)]
                continue
            with acting_as(FUNCTION):
                resp = self._kinesis.get_records(ShardIterator=iterator, Limit=self._config.ingest_batch_size,
                                                 StreamARN=stream)
            records = resp.get("Records", [])
            if records:
                self._deliver(stream, sid, records)
                handled += len(records)
            nxt = resp.get("NextShardIterator")
            if nxt:
                self._iterators[(stream, sid)] = nxt
            else:
                del self._iterators[(stream, sid)]  # a closed shard
        return handled

    def _deliver(self, stream: str, shard: str, records: list[dict[str, Any]]) -> None:
        pending, delay = records, 0.1
        while pending and not self._stop.is_set():
            result = self._handler(ingestion.kinesis_event(stream, shard, pending, self._config.region), None)
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            if not failed:
                return
            first = next((i for i, r in enumerate(pending) if r["SequenceNumber"] in failed), 0)
            log.warning("ingest failed for shard %s; retrying from record %d in %.1fs", shard, first, delay)
            pending = pending[first:]
            self._stop.wait(delay)
            delay = min(delay * 2, 5.0)

    def scan_once(self) -> dict[str, Any]:
        self._scanned = time.monotonic()
        return self._scan({}, None)

    def run(self) -> None:
        """Poll; after a pass that found nothing wait, twice as long each time up to IDLE_MAX_SECONDS (a stack without
        import topics reads the registry once a second), and go back to the short interval when records come."""
        wait = self._interval
        while not self._stop.is_set():
            try:
                if self.poll_once():
                    wait = self._interval
                else:
                    self._stop.wait(wait)
                    wait = min(wait * 2, max(self._interval, IDLE_MAX_SECONDS))
                if time.monotonic() - self._scanned >= self._scan_seconds:
                    self.scan_once()
            except Exception:
                log.exception("ingest pump iteration failed; retrying")
                self._stop.wait(1.0)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="metro-ingest-pump", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
