"""Import topics' records published once each (docs/import.md).

A batch of a source's partition (a Kinesis shard, a Kafka topic-partition) is published as follows:

1. read the partition's checkpoint (one consistent GetItem); records at or before it were published: skipped;
2. record the batch about to be published (one conditional UpdateItem: a request id chosen now, and the first and
   last positions it covers), unless the checkpoint already names a batch starting at the same record: then that
   earlier run crashed, and this one reuses its request id;
3. publish through PublishService (schemas, topic transforms, fan-out), as one publish request under that id; a
   request refused (a record failed its schema or transform) is published record by record, under ids derived
   from it, and each refused record is an IngestionFailureEvent in the log (when platformLogsSettings lets it);
4. move the checkpoint past the batch (one conditional UpdateItem).

A crash after step 3 leaves the batch recorded: the run that gets the batch again finds the publish request in
the messages table (written last by publish, one GetItem) and only moves the checkpoint. A crash inside step 3
(after some subscription queues got the messages, before the log item) republishes the batch under the same
request id, hence the same message ids: a subscription may then hold a message twice under one id, which is a
redelivery to the subscriber, not a second publish (exactly-once subscriptions deliver it once).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

from chalicelib.core import ingestion, limits
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.ingestion import SourceRecord
from chalicelib.core.names import Name
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PublishRequest
from chalicelib.observability import catalog, metrics
from chalicelib.service.context import Context
from chalicelib.service.publish import PublishService

log = logging.getLogger(__name__)

_PIECE_STRIDE = 2000  # a piece's individual records take ids piece+1..piece+1000


def derived_rid(rid: str, offset: int) -> str:
    """A request id ``offset`` after ``rid`` in its random part (same millisecond, so the same time order)."""
    return f"{rid[:13]}{(int(rid[13:]) + offset) % 1_000_000:06d}"


@dataclass
class IngestResult:
    published: int = 0
    failed: int = 0
    skipped: int = 0  # records seen before (at or before the checkpoint)
    retry: list[SourceRecord] = field(default_factory=list)  # partitions another run holds: hand back


class Ingestor:
    def __init__(self, ctx: Context, publisher: PublishService | None = None) -> None:
        self.ctx = ctx
        self.publisher = publisher or PublishService(ctx)

    def records(self, topic: Name, kind: str, records: Sequence[SourceRecord]) -> IngestResult:
        """Publish a source's records into ``topic`` once each, partition by partition."""
        result = IngestResult()
        spec = self.ctx.resources.cached_topic(topic).spec
        key = lambda r: (r.source, r.partition)  # noqa: E731
        for (source, partition), group in groupby(sorted(records, key=key), key=key):
            batch = sorted(group, key=lambda r: (len(r.position), r.position))
            self._partition(topic, spec, kind, source, partition, batch, result)
        return result

    def _partition(self, topic: Name, spec: Topic, kind: str, source: str, partition: str,
                   batch: list[SourceRecord], result: IngestResult) -> None:
        store = self.ctx.ingestion
        cp = store.checkpoint(topic.path, source, partition)
        elsewhere = cp.pending_rid and not (batch and batch[0].position == cp.pending_first)
        if elsewhere and store.logged(topic.path, cp.pending_rid) and store.commit(
                topic.path, source, partition, cp.pending_rid, cp.pending_last):
            cp = store.checkpoint(topic.path, source, partition)  # an earlier run's batch was published
        fresh = [r for r in batch if ingestion.position_after(r.position, cp.position)]
        result.skipped += len(batch) - len(fresh)
        if not fresh:
            return
        recovering = bool(cp.pending_rid) and cp.pending_first == fresh[0].position
        last = fresh[-1].position
        if recovering:
            rid = cp.pending_rid
            if ingestion.position_after(cp.pending_last, last):
                last = cp.pending_last
        else:
            rid = self.ctx.ids.request_id(self.ctx.clock())
            if not store.begin(topic.path, source, partition, cp, rid, fresh[0].position, last):
                result.retry.extend(fresh)  # another run holds the partition: the source hands the batch back
                return
        for n, start in enumerate(range(0, len(fresh), limits.MAX_MESSAGES_PER_PUBLISH)):
            piece = fresh[start:start + limits.MAX_MESSAGES_PER_PUBLISH]
            self._piece(topic, spec, kind, derived_rid(rid, n * _PIECE_STRIDE), piece, recovering, result)
        store.commit(topic.path, source, partition, rid, last)

    def _piece(self, topic: Name, spec: Topic, kind: str, rid: str, piece: list[SourceRecord], recovering: bool,
               result: IngestResult) -> None:
        good = [r for r in piece if self._publishable(topic, spec, kind, r, result)]
        if not good:
            return
        if recovering and self.ctx.ingestion.logged(topic.path, rid):
            result.skipped += len(good)
            return
        try:
            self._publish(topic, rid, good, result)
            return
        except InvalidArgument:
            pass  # one record (or more) refused: publish one by one, so the rest is not held back
        for i, rec in enumerate(good):
            one = derived_rid(rid, i + 1)
            if recovering and self.ctx.ingestion.logged(topic.path, one):
                result.skipped += 1
                continue
            try:
                self._publish(topic, one, [rec], result)
            except InvalidArgument as exc:
                self._failed(topic, spec, kind, rec, str(exc), ingestion.reason_of(str(exc)), result)

    def _publishable(self, topic: Name, spec: Topic, kind: str, rec: SourceRecord, result: IngestResult) -> bool:
        m = rec.message
        if not m.data and not m.attributes:
            self._failed(topic, spec, kind, rec, "a message needs data or attributes: the record is empty",
                         ingestion.API, result)
            return False
        if len(m.data) > limits.MAX_MESSAGE_BYTES:
            self._failed(topic, spec, kind, rec, "the record is larger than a Pub/Sub message may be",
                         ingestion.API, result)
            return False
        return True

    def _publish(self, topic: Name, rid: str, records: list[SourceRecord], result: IngestResult) -> None:
        self.publisher.publish(topic, PublishRequest(tuple(r.message for r in records)), request_id=rid)
        size = sum(r.size for r in records)
        result.published += len(records)
        metrics.add(catalog.INGESTED_MESSAGES, len(records), topic=topic.path)
        metrics.add(catalog.INGESTED_BYTES, size, topic=topic.path)

    def failed_object(self, topic: Name, error: str, details: dict[str, object]) -> None:
        """A Cloud Storage object that is not in its format: one failure event for the object."""
        self._log(topic, self.ctx.resources.cached_topic(topic).spec,
                  ingestion.failure_event(topic.path, "storage", error, ingestion.AVRO, dict(details)))

    def _failed(self, topic: Name, spec: Topic, kind: str, rec: SourceRecord, error: str, reason: str,
                result: IngestResult) -> None:
        result.failed += 1
        metrics.add(catalog.INGESTION_FAILURES, 1, topic=topic.path)
        self._log(topic, spec, ingestion.failure_event(topic.path, kind, error, reason, rec.details))

    @staticmethod
    def _log(topic: Name, spec: Topic, event: dict[str, object]) -> None:
        settings = spec.ingestion_data_source_settings
        severity = settings.platform_logs_settings.severity if settings and settings.platform_logs_settings else None
        if ingestion.failure_logged(severity):
            log.warning("IngestionFailureEvent %s", json.dumps(event, sort_keys=True),
                        extra={"ingestion_failure_event": event})
