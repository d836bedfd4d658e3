"""The ingest function: a batch of a Kinesis stream's or an MSK topic's records, from Lambda's event source mapping
(deployed) or the local ingest pump, published into every import topic that reads that source (docs/import.md).

Each topic publishes the records once (service/ingestor.py). A Kinesis batch that could not be published reports
the first record of each shard it left as a batch item failure, so the mapping hands the shard's records from
there back (and the topics that had published them skip them by their checkpoints); an MSK batch that fails raises,
and the mapping retries it.
"""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.core import ingestion, names
from chalicelib.core.errors import Aborted, MetroError, NotFound
from chalicelib.core.ingestion import SourceRecord
from chalicelib.service.context import Context
from chalicelib.service.ingestion import KINESIS, MSK
from chalicelib.service.ingestor import Ingestor

log = logging.getLogger(__name__)


def topics_for(ctx: Context, kind: str, source: str) -> list[str]:
    """The import topics reading ``source``: a stream ARN (whatever consumer), or ``{cluster ARN} {Kafka topic}``."""
    def matches(registered: str) -> bool:
        return registered.split(" ", maxsplit=1)[0] == source if kind == KINESIS else registered == source
    # read on every batch: a topic created a moment ago must get the records that follow (a cache would skip them)
    return [t for t, k, s in ctx.ingestion.registered() if k == kind and matches(s)]


class IngestHandler:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.ingestor = Ingestor(ctx)

    def handle(self, event: dict[str, Any]) -> dict[str, Any]:
        source = str(event.get("eventSource") or (event.get("Records") or [{}])[0].get("eventSource", ""))
        if source in ("aws:kafka", "SelfManagedKafka"):
            return self.msk(event)
        return self.kinesis(event)

    def kinesis(self, event: dict[str, Any]) -> dict[str, Any]:
        records = ingestion.kinesis_records(event)
        failures: dict[str, SourceRecord] = {}  # shard -> the first record to hand back
        published = failed = 0
        by_stream: dict[str, list[SourceRecord]] = {}
        for rec in records:
            by_stream.setdefault(rec.source, []).append(rec)
        for stream, recs in by_stream.items():
            for topic in topics_for(self.ctx, KINESIS, stream):
                try:
                    got = self.ingestor.records(names.parse(topic, "topics"), "kinesis", recs)
                except NotFound:
                    continue  # deleted since the registry was read
                except MetroError as exc:
                    log.warning("ingest into %s failed: %s; the batch comes again", topic, exc)
                    retry = recs
                else:
                    published, failed, retry = published + got.published, failed + got.failed, got.retry
                for rec in retry:
                    first = failures.get(rec.partition)
                    if first is None or ingestion.position_after(first.position, rec.position):
                        failures[rec.partition] = rec
        return {"batchItemFailures": [{"itemIdentifier": r.position} for r in failures.values()],
                "published": published, "failed": failed}

    def msk(self, event: dict[str, Any]) -> dict[str, Any]:
        records = ingestion.msk_records(event)
        published = failed = 0
        by_topic: dict[str, list[SourceRecord]] = {}
        for rec in records:
            by_topic.setdefault(f"{rec.source} {rec.details['kafka_topic']}", []).append(rec)
        for source, recs in by_topic.items():
            for topic in topics_for(self.ctx, MSK, source):
                try:
                    got = self.ingestor.records(names.parse(topic, "topics"), "msk", recs)
                except NotFound:
                    continue
                if got.retry:
                    raise Aborted(f"import topic {topic}: a partition is held by another run; retry the batch")
                published, failed = published + got.published, failed + got.failed
        return {"published": published, "failed": failed}
