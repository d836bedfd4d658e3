"""Lambda event source mappings: a push subscription's queue feeding the push Lambda (deployed mode only).

Metro manages these itself (Chalice cannot declare them: queues come and go with subscriptions).
Every mapping reports partial batch failures (``FunctionResponseTypes=["ReportBatchItemFailures"]``)
so that only the nacked messages of a batch return to the queue, and caps its concurrency
(``ScalingConfig.MaximumConcurrency``) so one subscription cannot take every push Lambda.

Never call this against the emulator: moto would drain the queue into a Lambda it cannot run.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

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

Settings = tuple[bool, int, tuple[str, ...], int]  # enabled, batch size, response types, maximum concurrency


def _settings(mapping: EventSourceMappingConfigurationTypeDef) -> Settings:
    return (mapping.get("State") in _ON, mapping.get("BatchSize", 0), tuple(mapping.get("FunctionResponseTypes", [])),
            mapping.get("ScalingConfig", {}).get("MaximumConcurrency", 0))


class MappingStore:
    def __init__(self, config: Config) -> None:
        self._lambda = aws.lambda_(config)
        self._function = config.push_function
        self._batch = max(1, min(config.push_batch_size, 10))
        self._concurrency = max(2, min(config.push_max_concurrency, 1000))

    def find(self, queue_arn: str) -> list[EventSourceMappingConfigurationTypeDef]:
        """The mappings from ``queue_arn`` to the push function (normally zero or one)."""
        found: list[EventSourceMappingConfigurationTypeDef] = []
        args: ListEventSourceMappingsRequestTypeDef = {"EventSourceArn": queue_arn, "FunctionName": self._function}
        with aws_errors("ListEventSourceMappings"):
            while True:
                resp = self._lambda.list_event_source_mappings(**args)
                found.extend(resp.get("EventSourceMappings", []))
                if not resp.get("NextMarker"):
                    return found
                args["Marker"] = resp["NextMarker"]

    def ensure(self, queue_arn: str) -> str:
        """Create (or re-enable) the mapping for ``queue_arn``; returns its UUID."""
        for mapping in self.find(queue_arn):
            if mapping.get("State") in ("Deleting",):
                continue
            uuid = mapping["UUID"]
            if _settings(mapping) != (True, self._batch, (_REPORT,), self._concurrency):
                self._update(uuid)
            return uuid
        with aws_errors("CreateEventSourceMapping"):
            resp = self._lambda.create_event_source_mapping(
                EventSourceArn=queue_arn,
                FunctionName=self._function,
                Enabled=True,
                BatchSize=self._batch,
                MaximumBatchingWindowInSeconds=0,
                FunctionResponseTypes=[_REPORT],
                ScalingConfig={"MaximumConcurrency": self._concurrency},
            )
        log.info("created event source mapping %s for %s", resp["UUID"], queue_arn)
        return resp["UUID"]

    def _update(self, uuid: str) -> None:
        try:
            with aws_errors("UpdateEventSourceMapping", allow=_BUSY):
                self._lambda.update_event_source_mapping(
                    UUID=uuid, Enabled=True, BatchSize=self._batch, FunctionResponseTypes=[_REPORT],
                    ScalingConfig={"MaximumConcurrency": self._concurrency})
        except ClientError as exc:  # still being created or updated: it is on its way
            log.info("event source mapping %s is busy: %s", uuid, code_of(exc))

    def remove(self, queue_arn: str) -> int:
        """Delete every mapping from ``queue_arn`` to the push function; returns how many."""
        removed = 0
        for mapping in self.find(queue_arn):
            try:
                with aws_errors("DeleteEventSourceMapping", allow=_GONE + _BUSY):
                    self._lambda.delete_event_source_mapping(UUID=mapping["UUID"])
                removed += 1
            except ClientError as exc:
                if code_of(exc) in _BUSY:  # already being deleted (or created): Lambda finishes it
                    log.info("event source mapping %s is busy: %s", mapping["UUID"], code_of(exc))
        return removed
