"""Export delivery: a Lambda SQS event of one export subscription's queue -> files in S3 (docs/export.md).

Per batch: the shared delivery steps (service/delivery.py) decode the records and count their delivery attempts;
undecodable ones are dropped (acknowledged), ones past ``maxDeliveryAttempts`` go to the dead-letter topic, the
bodies are fetched (a body stored nowhere waits for its visibility timeout); the subscription's message transforms
run (:func:`transformed`); the rest is cut into files by ``maxMessages`` and ``maxBytes`` and each file is ONE
PutObject (atomic: a file is whole or absent). Only then are its messages deleted from the queue (the ack), in one
DeleteMessageBatch per ten. A file that could not be written sends its messages back with the retry policy's
backoff (one ChangeMessageVisibilityBatch per ten) and reports them in ``batchItemFailures``; a message at its
last attempt goes to the dead-letter topic instead. A bucket found gone or forbidden is recorded as the
subscription's ``state`` (NOT_FOUND, PERMISSION_DENIED), and ACTIVE again after a good write.

A file's name is deterministic for its messages (core/export_files.py): a batch retried whole overwrites its own
object; a batch cut differently on its retry may leave a message in two files (at-least-once, as Google's).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from chalicelib.core import export_files, live, names
from chalicelib.core.queueing.deadletter import is_last_attempt, past_max_attempts
from chalicelib.core.queueing.retry import nack_delay
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_timestamp
from chalicelib.service import export_schemas, exports, transforms
from chalicelib.service.context import Context
from chalicelib.service.deadletter import DeadLetters, parked_seconds
from chalicelib.service.delivery import Delivery, Steps, SubscriptionCache, decode_received
from chalicelib.service.publish import PublishService
from chalicelib.store.push_state import queue_key, queue_name_of

log = logging.getLogger(__name__)

CACHE_TTL = 2.0  # how long a warm handler trusts its copy of a subscription
CONTENT_TYPES = {True: "avro/binary", False: "text/plain"}


@dataclass
class Outcome:
    acked: bool
    visibility: int = 0  # when not acked: seconds before it is received again


@dataclass
class Written:
    """What one batch did (the handler's answer is built from ``results``)."""

    results: dict[str, Outcome] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    state: str = export_files.ACTIVE


class ExportDelivery:
    def __init__(self, ctx: Context, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.ctx = ctx
        self.steps = Steps(ctx)
        self.dead_letters = DeadLetters(ctx, PublishService(ctx).append)
        self.subscriptions = SubscriptionCache(ctx, CACHE_TTL, monotonic)

    # -- entry point --------------------------------------------------------------------------------
    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """Lambda SQS event in, ``{"batchItemFailures": [...]}`` out."""
        if not event.get("Records"):
            return {"batchItemFailures": []}
        by_queue: dict[str, list[dict[str, Any]]] = {}
        for record in event["Records"]:
            by_queue.setdefault(record.get("eventSourceARN", ""), []).append(record)
        results: dict[str, Outcome] = {}
        for arn, records in by_queue.items():
            try:
                results.update(self.queue_batch(arn, records).results)
            except Exception:  # the whole batch returns to the queue after its visibility timeout
                log.exception("export batch from %s failed", arn)

        def record_handler(record: SQSRecord) -> None:
            outcome = results.get(record.message_id)
            if outcome is None or not outcome.acked:
                raise ExportNotWritten(record.message_id)

        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                             context=context))

    # -- one queue's records ------------------------------------------------------------------------
    def queue_batch(self, arn: str, records: list[dict[str, Any]]) -> Written:
        rec = self.subscriptions.get(queue_key(arn))
        deliveries = [d for r in records for d in _deliveries(r)]
        out = Written()
        if rec is None or queue_name_of(rec.queue_url) != queue_name_of(arn):
            log.info("queue %s belongs to no subscription now; %d message(s) left", arn, len(deliveries))
            out.results.update({d.key: Outcome(False) for d in deliveries})
            return out
        self.steps.count_attempts(rec, deliveries)
        if not exports.is_export(rec.spec):  # no longer an export subscription: hand them back at once
            self.steps.skipped(rec, deliveries)
            self.ctx.queues.change_visibility_batch(rec.queue_url, [(r, 0) for r in
                                                                    dict.fromkeys(d.receipt for d in deliveries)])
            out.results.update({d.key: Outcome(False) for d in deliveries})
            return out
        kept = self._transformed(rec, self._sorted(rec, deliveries, out), out)
        if kept:
            self._write(rec, kept, out)
        self._settle(rec, deliveries, out)
        return out

    def _transformed(self, rec: SubscriptionRecord, ready: list[Delivery], out: Written) -> list[Delivery]:
        """The subscription's message transforms (docs/transforms.md): the deliveries to write. A dropped message is
        acknowledged; one a transform fails on goes to the dead-letter topic, or without one is nacked."""
        if not rec.spec.message_transforms:
            return ready
        shaped = transforms.for_delivery(self.ctx, rec, ready)
        out.results.update({d.key: Outcome(True) for d in shaped.dropped})
        failed = transforms.failures(rec, shaped)
        if failed and rec.spec.dead_letter_policy is not None:
            self._dead_letter(rec, failed, out, ended=True)
        out.results.update({d.key: Outcome(False, _backoff(rec, d)) for d in failed if d.key not in out.results})
        return shaped.kept

    def _sorted(self, rec: SubscriptionRecord, deliveries: list[Delivery], out: Written) -> list[Delivery]:
        """Outcomes for the deliveries that are not written; the ones to write, bodies fetched."""
        dead = []
        for d in deliveries:
            if d.env is None:
                out.results[d.key] = Outcome(True)  # it can never be written
            elif past_max_attempts(rec, d.attempt):
                dead.append(d)
        if dead:
            self._dead_letter(rec, dead, out)
        todo = [d for d in deliveries if d.key not in out.results]
        self.steps.fetch_bodies(todo)
        for d in todo:
            if d.data is None:
                log.error("body of message %s is no longer stored", d.message_id)
                out.results[d.key] = Outcome(False, rec.spec.ack_deadline)
        return [d for d in todo if d.data is not None]

    def _dead_letter(self, rec: SubscriptionRecord, due: list[Delivery], out: Written, ended: bool = False) -> None:
        forwarded = self.dead_letters.forward(rec, due, ended=ended)
        out.results.update({d.key: Outcome(True) for d in forwarded.removed})
        out.results.update({d.key: Outcome(False, parked_seconds(self.ctx)) for d in forwarded.parked})

    def _write(self, rec: SubscriptionRecord, ready: list[Delivery], out: Written) -> None:
        cfg = rec.spec.cloud_storage_config
        assert cfg is not None
        s = export_files.settings(cfg)
        role = exports.role_of(self.ctx.config, s.service_account)
        for chunk in cut(s, ready):
            messages = [_message(d) for d in chunk]
            if s.avro is not None and s.avro.use_topic_schema:
                groups, failed = export_schemas.grouped(self.ctx, rec, messages)
                if failed:
                    log.error("%d message(s) of %s do not decode with the topic's schema", len(failed), rec.name)
                    self._failed(rec, [chunk[i] for i in failed], out, export_files.ACTIVE)
            else:
                groups = [export_schemas.Group(None, list(range(len(chunk))))]
            for g in groups:
                self._file(rec, s, role, [chunk[i] for i in g.indexes], [messages[i] for i in g.indexes], g, out)
        if out.files and out.state == export_files.ACTIVE:
            exports.record_state(self.ctx, rec, export_files.ACTIVE)
        elif out.state != export_files.ACTIVE:
            exports.record_state(self.ctx, rec, out.state)

    def _file(self, rec: SubscriptionRecord, s: export_files.Settings, role: str, chunk: list[Delivery],
              messages: list[export_files.Message], g: export_schemas.Group, out: Written) -> None:
        """One file: one PutObject; its messages acknowledged when it is written, else sent back."""
        body = export_files.file_bytes(s, messages, rec.name, g.schema, g.records if g.schema is not None else None)
        first = min(m.publish_time for m in messages)
        key = export_files.object_name(s, first, export_files.unique_part(rec.name, [m.message_id for m in messages]))
        try:
            state = self.ctx.exports.put(s.bucket, key, body, CONTENT_TYPES[s.avro is not None], role)
        except Exception:
            log.exception("export of %d message(s) of %s failed", len(chunk), rec.name)
            state = ""
        if state == export_files.ACTIVE:
            out.files.append(key)
            out.results.update({d.key: Outcome(True) for d in chunk})
            self._count(rec, chunk)
            return
        self._failed(rec, chunk, out, state or out.state)

    def _failed(self, rec: SubscriptionRecord, chunk: list[Delivery], out: Written, state: str) -> None:
        """Not written: back to the queue after the retry policy's backoff; a last attempt to the dead letters."""
        out.state = state
        ended = [d for d in chunk if is_last_attempt(rec, d.attempt)]
        if ended:
            self._dead_letter(rec, ended, out, ended=True)
        out.results.update({d.key: Outcome(False, _backoff(rec, d)) for d in chunk if d.key not in out.results})

    def _count(self, rec: SubscriptionRecord, chunk: Sequence[Delivery]) -> None:
        try:  # bookkeeping: a failure must not undo the write
            self.ctx.counters.add(names.parse(rec.name, "subscriptions"),
                                  {live.DELIVERED: len(chunk), live.ACKED: len(chunk)}, self.ctx.clock())
            self.steps.activity.mark(rec.name)
        except Exception:
            log.exception("export bookkeeping for %s failed", rec.name)

    # -- settle -------------------------------------------------------------------------------------
    def _settle(self, rec: SubscriptionRecord, deliveries: list[Delivery], out: Written) -> None:
        """One DeleteMessageBatch (per ten) for the written, one ChangeMessageVisibilityBatch for the rest."""
        acked = list(dict.fromkeys(d.receipt for d in deliveries if d.key in out.results and out.results[d.key].acked))
        later = list(dict.fromkeys((d.receipt, out.results[d.key].visibility) for d in deliveries
                                   if d.key in out.results and not out.results[d.key].acked))
        if acked and self.ctx.queues.delete_batch(rec.queue_url, acked):
            log.warning("some exported messages of %s were not deleted (they may be written again)", rec.name)
        if later:
            self.ctx.queues.change_visibility_batch(rec.queue_url, later)


def cut(s: export_files.Settings, deliveries: Sequence[Delivery]) -> list[list[Delivery]]:
    """The deliveries in files of at most maxMessages messages and maxBytes of data (a message larger than
    maxBytes is a file of its own, as Google lets one exceed it)."""
    files: list[list[Delivery]] = [[]]
    size = 0
    for d in deliveries:
        n, current = len(d.data or b""), files[-1]
        if current and ((s.max_messages and len(current) >= s.max_messages) or
                        (s.max_bytes and size + n > s.max_bytes)):
            files.append([])
            size = 0
        files[-1].append(d)
        size += n
    return [f for f in files if f]


def _backoff(rec: SubscriptionRecord, d: Delivery) -> int:
    """A failed write is a nack: redelivered after the retry policy's backoff (at once without one)."""
    return nack_delay(rec, d.attempt)


def _message(d: Delivery) -> export_files.Message:
    env = d.env
    assert env is not None and d.data is not None
    return export_files.Message(env.message_id, parse_timestamp(env.publish_time, "publish_time"), d.data,
                                dict(env.attributes), env.ordering_key)


def _deliveries(record: dict[str, Any]) -> list[Delivery]:
    attrs = record.get("attributes") or {}
    sqs_id = str(record["messageId"])
    return decode_received(record.get("body", ""), str(record["receiptHandle"]),
                           int(attrs.get("ApproximateReceiveCount", "1")), sqs_id, sqs_id)


class ExportNotWritten(Exception):
    """Raised for a record whose message was not written (it goes into batchItemFailures)."""


class _Warm:
    lock = threading.Lock()
    held: tuple[Context, ExportDelivery] | None = None


def export_delivery(ctx: Context) -> ExportDelivery:
    """The handler of this process for ``ctx``: one per context, built on first use."""
    with _Warm.lock:
        if _Warm.held is None or _Warm.held[0] is not ctx:
            _Warm.held = (ctx, ExportDelivery(ctx))
        return _Warm.held[1]
