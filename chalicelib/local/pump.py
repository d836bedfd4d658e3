"""The local trigger pump: plays Lambda's event sources on one machine.

It reads the messages table's DynamoDB stream and calls the same fan-out handler the Lambda
runs, with Lambda-shaped events and Lambda's partial-failure semantics: when the handler
reports failed records, the batch is retried from the first failed record (with backoff) and
the shard does not advance past it. Shard checkpoints are kept in the resources table, so a
restarted pump against a persistent emulator resumes where it stopped.

Its stream reads are what the deployed event source mapping does with the fan-out function's role, so the IAM
call recorder counts them as ``fanout``'s (store/call_record.py); finding the stream (DescribeTable) and the
checkpoints in the resources table are the pump's own book-keeping (the mapping keeps its own), left unlabelled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.call_record import acting_as
from chalicelib.store.log import FANNED_OUT

log = logging.getLogger("metro.pump")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
DISCOVER_SECONDS = 1.0
FUNCTION = "fanout"  # whose role the deployed stream mapping reads with
IDLE_MAX_SECONDS = 0.25  # publish fans out directly; the stream only carries the rare fallback


class StreamPump:
    def __init__(self, config: Config, handler: Handler, interval: float = 0.02, batch_size: int = 100) -> None:
        self._config = config
        self._handler = handler
        self._interval = interval
        self._batch = batch_size
        self._streams = aws.client("dynamodbstreams", config)
        self._ddb = aws.client("dynamodb", config)
        self._iterators: dict[str, str] = {}
        self._stop = threading.Event()
        self._arn = ""
        self._described = 0.0
        self.pending = 0  # records of the last pass that publish had not fanned out itself

    # -- checkpoints ------------------------------------------------------------------------
    def _checkpoint_key(self, shard: str) -> dict[str, Any]:
        return {"pk": {"S": f"pump#{self._config.messages_table}"}, "sk": {"S": shard}}

    def _load_checkpoint(self, shard: str) -> str | None:
        item = self._ddb.get_item(TableName=self._config.resources_table, Key=self._checkpoint_key(shard)).get("Item")
        return item["seq"]["S"] if item else None

    def _save_checkpoint(self, shard: str, seq: str) -> None:
        self._ddb.put_item(TableName=self._config.resources_table,
                           Item={**self._checkpoint_key(shard), "seq": {"S": seq}})

    # -- shards -----------------------------------------------------------------------------
    def _discover(self) -> None:
        """Find new shards, at most once a second (their iterators carry the reading in between)."""
        if self._iterators and time.monotonic() - self._described < DISCOVER_SECONDS:
            return
        self._described = time.monotonic()
        if not self._arn:
            desc = self._ddb.describe_table(TableName=self._config.messages_table)["Table"]
            self._arn = desc["LatestStreamArn"]
        with acting_as(FUNCTION):
            shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]
        for shard in shards:
            sid = shard["ShardId"]
            if sid in self._iterators:
                continue
            seq = self._load_checkpoint(sid)
            args: dict[str, Any] = {"StreamArn": self._arn, "ShardId": sid}
            if seq:
                args.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=seq)
            else:
                args["ShardIteratorType"] = "TRIM_HORIZON"
            with acting_as(FUNCTION):
                self._iterators[sid] = self._streams.get_shard_iterator(**args)["ShardIterator"]

    def poll_once(self) -> int:
        """Read every shard once and deliver what arrived; returns the number of records handled."""
        self._discover()
        handled = self.pending = 0
        for sid, iterator in list(self._iterators.items()):
            with acting_as(FUNCTION):
                resp = self._streams.get_records(ShardIterator=iterator, Limit=self._batch)
            records = resp.get("Records", [])
            if records:
                self.pending += sum(1 for r in records if not _fanned_out(r))
                self._deliver(records)
                self._save_checkpoint(sid, records[-1]["dynamodb"]["SequenceNumber"])
                handled += len(records)
            nxt = resp.get("NextShardIterator")
            if nxt:
                self._iterators[sid] = nxt
            else:
                del self._iterators[sid]  # closed shard
        return handled

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        pending = [{**r, "eventSourceARN": self._arn} for r in records]
        delay = 0.1
        while pending and not self._stop.is_set():
            result = self._handler({"Records": pending}, None)
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            if not failed:
                return
            first = next(i for i, r in enumerate(pending) if r["dynamodb"]["SequenceNumber"] in failed)
            log.warning("fan-out failed for %d record(s); retrying from record %d in %.1fs", len(failed), first, delay)
            pending = pending[first:]
            self._stop.wait(delay)
            delay = min(delay * 2, 5.0)

    # -- loop -------------------------------------------------------------------------------
    def run(self) -> None:
        """Poll; after a pass with nothing to fan out wait, twice as long each time up to IDLE_MAX_SECONDS,
        and go back to the short interval as soon as a pass finds records to fan out. Records that publish
        fanned out itself (the usual case) do not count: a stack that only publishes polls the stream
        four times a second, not fifty (an emulator in another process pays for every poll;
        docs/decisions/external-emulator.md)."""
        wait = self._interval
        while not self._stop.is_set():
            try:
                self.poll_once()
                if self.pending:
                    wait = self._interval
                else:
                    self._stop.wait(wait)
                    wait = min(wait * 2, max(self._interval, IDLE_MAX_SECONDS))
            except Exception:
                log.exception("pump iteration failed; retrying")
                self._stop.wait(1.0)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="metro-pump", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()


def _fanned_out(record: dict[str, Any]) -> bool:
    """Whether publish already enqueued this log item for every subscription (fan-out will skip it)."""
    image = record.get("dynamodb", {}).get("NewImage", {})
    return bool(image.get(FANNED_OUT, {}).get("BOOL", False))


def wait_idle(pump: StreamPump, timeout: float = 5.0) -> None:
    """Poll until a pass handles nothing (tests and benchmarks use it to drain the stream)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and pump.poll_once():
        pass
