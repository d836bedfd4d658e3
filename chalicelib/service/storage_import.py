"""Cloud Storage import topics onto S3: each new object of the bucket read once and published (docs/import.md).

Every scan (the maintenance schedule deployed, the ingest pump locally) lists the bucket (ListObjectsV2, 1,000
objects a page), keeps the objects created at or after ``minimumObjectCreateTime`` whose key matches
``matchGlob`` (Google's glob, core/ingestion.py), and reads each object it has no finished checkpoint for. The
object is one partition of the Ingestor (service/ingestor.py): its messages (core/ingestion_objects.py) are
positions 1..n, so an object is published once even when a scan dies half way, and its finished checkpoint (one
item per object) is what "already read" means. A warm process remembers the objects it finished, so a scan reads
the checkpoint of an object at most once per process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from chalicelib.core import ingestion, names
from chalicelib.core.errors import InvalidArgument, MetroError, NotFound
from chalicelib.core.ingestion import SourceRecord
from chalicelib.core.ingestion_objects import delimiter_of, format_of, messages
from chalicelib.core.timefmt import parse_timestamp
from chalicelib.core.wire.ingestion import CloudStorage
from chalicelib.observability import catalog, metrics
from chalicelib.service.context import Context
from chalicelib.service.ingestion import STORAGE
from chalicelib.service.ingestor import Ingestor

log = logging.getLogger(__name__)
_DONE: set[tuple[str, str, str]] = set()  # (topic, bucket, key) finished, in this process


@dataclass
class ScanResult:
    objects: int = 0
    published: int = 0
    failed: int = 0


def source_name(bucket: str) -> str:
    return f"s3://{bucket}"


def scan_all(ctx: Context) -> ScanResult:
    """Scan every Cloud Storage import topic's bucket once."""
    total = ScanResult()
    for topic, kind, _ in ctx.ingestion.registered():
        if kind != STORAGE:
            continue
        try:
            got = scan(ctx, names.parse(topic, "topics"))
        except NotFound:
            continue
        except MetroError as exc:
            log.warning("import topic %s: scan failed: %s", topic, exc)
            continue
        total.objects, total.published, total.failed = (total.objects + got.objects, total.published + got.published,
                                                        total.failed + got.failed)
    return total


def scan(ctx: Context, topic: names.Name) -> ScanResult:
    result = ScanResult()
    spec = ctx.resources.require_topic(topic).spec
    settings = spec.ingestion_data_source_settings
    source = settings.cloud_storage if settings else None
    if source is None or not source.bucket:
        return result
    after = parse_timestamp(source.minimum_object_create_time, "minimumObjectCreateTime") \
        if source.minimum_object_create_time else 0.0
    pattern = ingestion.glob_regex(source.match_glob) if source.match_glob else None
    ingestor = Ingestor(ctx)
    for obj in ctx.ingestion.objects(source.bucket, after):
        done = (topic.path, source.bucket, obj.key)
        if done in _DONE or (pattern is not None and not pattern.match(obj.key)):
            continue
        cp = ctx.ingestion.checkpoint(topic.path, source_name(source.bucket), obj.key)
        if cp.position is not None and not cp.pending_rid:
            _DONE.add(done)
            continue
        got = _object(ctx, ingestor, topic, source, obj.key)
        result.objects += 1
        result.published += got[0]
        result.failed += got[1]
        _DONE.add(done)
    return result


def _object(ctx: Context, ingestor: Ingestor, topic: names.Name, source: CloudStorage, key: str) -> tuple[int, int]:
    body = ctx.ingestion.read_object(source.bucket, key)
    if body is None:
        return 0, 0
    details = {"bucket": source.bucket, "object_name": key, "object_generation": 0}
    src = source_name(source.bucket)
    try:
        records = [SourceRecord(m, src, key, str(i), details)
                   for i, m in enumerate(messages(format_of(source), body, delimiter_of(source)), start=1)]
    except InvalidArgument as exc:  # not Avro: the object is one failure, and done
        metrics.add(catalog.INGESTION_FAILURES, 1, topic=topic.path)
        ingestor.failed_object(topic, str(exc), details)
        records = []
    if not records:  # an empty (or unreadable) object: its checkpoint says it was read
        ctx.ingestion.finish_empty(topic.path, src, key)
        return 0, 0
    got = ingestor.records(topic, "storage", records)
    return got.published, got.failed
