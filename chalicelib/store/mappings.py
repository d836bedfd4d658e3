"""Lambda event source mappings: a push subscription's queue feeding the push Lambda (deployed mode only).

Metro manages these itself (Chalice cannot declare them: queues come and go with subscriptions).
Every mapping reports partial batch failures (``FunctionResponseTypes=["ReportBatchItemFailures"]``)
so that only the nacked messages of a batch return to the queue, and caps its concurrency
(``ScalingConfig.MaximumConcurrency``) so one subscription cannot take every push Lambda.

The same store maps an export subscription's queue onto the export function (:class:`Target`: another
function, a batch of up to 10,000 records and a batching window, docs/export.md); push keeps its defaults.

Never call this against the emulator: moto would drain the queue into a Lambda it cannot run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, code_of

if TYPE_CHECKING:
    from mypy_boto3_lambda.type_defs import (
        EventSourceMappingConfigurationTypeDef,
        ListEventSourceMappingsRequestTypeDef,
    )

log = logging.getLogger(__name__)

_GONE = ("ResourceNotFoundException",)
_BUSY = ("ResourceInUseException", "ResourceConflictException")
_ON = ("Enabled", "Enabling", "Updating")
_REPORT: Final = "ReportBatchItemFailures"

# enabled, batch size, response types, maximum concurrency, batching window
Settings = tuple[bool, int, tuple[str, ...], int, int]


@dataclass(frozen=True)
class Target:
    """The function a queue feeds and the mapping's settings."""

    function: str
    batch: int  # BatchSize: 1-10 without a window, up to 10,000 with one
    concurrency: int  # ScalingConfig.MaximumConcurrency, 2-1000
    window: int = 0  # MaximumBatchingWindowInSeconds, 0-300


def list_mappings(client: Any, source_arn: str, function: str) -> list[EventSourceMappingConfigurationTypeDef]:
    """Every mapping from ``source_arn`` (a queue, stream or cluster) to ``function``, page by page."""
    found: list[EventSourceMappingConfigurationTypeDef] = []
    args: ListEventSourceMappingsRequestTypeDef = {"EventSourceArn": source_arn, "FunctionName": function}
    with aws_errors("ListEventSourceMappings"):
        while True:
            resp = client.list_event_source_mappings(**args)
            found.extend(resp.get("EventSourceMappings", []))
            if not resp.get("NextMarker"):
                return found
            args["Marker"] = resp["NextMarker"]


def _settings(mapping: EventSourceMappingConfigurationTypeDef) -> Settings:
    return (mapping.get("State") in _ON, mapping.get("BatchSize", 0), tuple(mapping.get("FunctionResponseTypes", [])),
            mapping.get("ScalingConfig", {}).get("MaximumConcurrency", 0),
            mapping.get("MaximumBatchingWindowInSeconds", 0))


class MappingStore:
    def __init__(self, config: Config) -> None:
        self._lambda = aws.lambda_(config)
        self.push = Target(config.push_function, max(1, min(config.push_batch_size, 10)),
                           max(2, min(config.push_max_concurrency, 1000)))

    def find(self, queue_arn: str, function: str = "") -> list[EventSourceMappingConfigurationTypeDef]:
        """The mappings from ``queue_arn`` to ``function`` (the push function by default; normally zero or one)."""
        return list_mappings(self._lambda, queue_arn, function or self.push.function)

    def ensure(self, queue_arn: str, target: Target | None = None) -> str:
        """Create (or re-enable, or bring in line with ``target``) the mapping for ``queue_arn``; returns its
        UUID. ``target`` defaults to the push function's."""
        t = target or self.push
        for mapping in self.find(queue_arn, t.function):
            if mapping.get("State") in ("Deleting",):
                continue
            uuid = mapping["UUID"]
            if _settings(mapping) != (True, t.batch, (_REPORT,), t.concurrency, t.window):
                self._update(uuid, t)
            return uuid
        with aws_errors("CreateEventSourceMapping"):
            resp = self._lambda.create_event_source_mapping(
                EventSourceArn=queue_arn,
                FunctionName=t.function,
                Enabled=True,
                BatchSize=t.batch,
                MaximumBatchingWindowInSeconds=t.window,
                FunctionResponseTypes=[_REPORT],
                ScalingConfig={"MaximumConcurrency": t.concurrency},
            )
        log.info("created event source mapping %s for %s", resp["UUID"], queue_arn)
        return resp["UUID"]

    def _update(self, uuid: str, t: Target) -> None:
        try:
            with aws_errors("UpdateEventSourceMapping", allow=_BUSY):
                self._lambda.update_event_source_mapping(
                    UUID=uuid, Enabled=True, BatchSize=t.batch, MaximumBatchingWindowInSeconds=t.window,
                    FunctionResponseTypes=[_REPORT], ScalingConfig={"MaximumConcurrency": t.concurrency})
        except ClientError as exc:  # still being created or updated: it is on its way
            log.info("event source mapping %s is busy: %s", uuid, code_of(exc))

    def remove(self, queue_arn: str, function: str = "") -> int:
        """Delete every mapping from ``queue_arn`` to ``function`` (the push function by default); returns how
        many."""
        removed = 0
        for mapping in self.find(queue_arn, function):
            try:
                with aws_errors("DeleteEventSourceMapping", allow=_GONE + _BUSY):
                    self._lambda.delete_event_source_mapping(UUID=mapping["UUID"])
                removed += 1
            except ClientError as exc:
                if code_of(exc) in _BUSY:  # already being deleted (or created): Lambda finishes it
                    log.info("event source mapping %s is busy: %s", mapping["UUID"], code_of(exc))
        return removed
