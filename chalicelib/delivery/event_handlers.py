"""Event handler entry points shared by Lambda (via app.py) and the local trigger pump.

Each runs as its Lambda function (store/call_record.acting_as): the IAM call recorder of ``make test`` checks its
AWS calls against that function's policy (infra/iam_gate.py)."""

from __future__ import annotations

from typing import Any

from chalicelib.config import Config
from chalicelib.core import transforms
from chalicelib.core.fanout_slices import is_slice_event
from chalicelib.delivery.export import export_delivery
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.ingest import IngestHandler
from chalicelib.delivery.maintenance import (
    catch_up_fanout,
    expire_idle_subscriptions,
    hourly_work_due,
    sweep_dead_letters,
)
from chalicelib.delivery.push import push_delivery
from chalicelib.runtime import services
from chalicelib.service.seek_worker import SeekWorker
from chalicelib.service.storage_import import scan_all
from chalicelib.store.call_record import acting_as


def maintenance(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, Any]:
    """Every minute in AWS: the dead-letter sweep, the fan-out catch-up, stalled seeks and the Cloud Storage import
    topics' buckets; in the first minute of each hour, the idle expiry too."""
    with acting_as("maintenance"):
        ctx = services().ctx
        swept = sweep_dead_letters(ctx)
        return {"deadLettered": swept, "fannedOut": catch_up_fanout(ctx, event),
                "expired": expire_idle_subscriptions(ctx) if hourly_work_due(event) else [],
                "seeks_resumed": SeekWorker(ctx).resume_stalled(), "imported_objects": scan_all(ctx).objects}


def dead_letter_sweep(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, Any]:
    """The sweep alone (the local stack runs it more often; deployed, it is part of maintenance)."""
    with acting_as("maintenance"):
        return {"deadLettered": sweep_dead_letters(services().ctx)}


# A batch of the messages table's stream, or one slice of a wide topic's fan-out (an asynchronous invocation by
# the function itself, or the local trigger pump)
def fanout(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with acting_as("fanout"):
        if is_slice_event(event):
            return FanOut(services().ctx).run_slice(event)
        return FanOut(services().ctx).handle(event, context)


# An SQS batch of one push subscription's queue (event source mapping or local pump)
def push(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with acting_as("push"):
        return push_delivery(services().ctx).handle(event, context)


# An SQS batch of one export subscription's queue (event source mapping or the local export pump): files in S3
def export(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with acting_as("export"):
        return export_delivery(services().ctx).handle(event, context)


# One chunk of a background seek (asynchronous invocation, or the local trigger pump)
def seek_worker(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with acting_as("seek_worker"):
        return SeekWorker(services().ctx).handle(event)


# A batch of a Kinesis stream's or an MSK topic's records (event source mapping, or the local ingest pump)
def ingest(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    with acting_as("ingest"):
        return IngestHandler(services().ctx).handle(event)


# The Cloud Storage import topics' buckets, scanned (the maintenance schedule deployed, the ingest pump locally)
def ingest_scan(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, Any]:
    with acting_as("maintenance"):
        got = scan_all(services().ctx)
        return {"objects": got.objects, "published": got.published, "failed": got.failed}


def transform(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """The transform function: one batch of message transforms run in this process's V8 (docs/transforms.md). It
    makes no AWS call and reads no secret: only the time and memory caps of the configuration."""
    config = Config()
    return transforms.run_batch(transforms.Limits(config.transform_call_ms, config.transform_memory_bytes), event)
