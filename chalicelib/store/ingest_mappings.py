"""Lambda event source mappings from a Kinesis stream (or its enhanced fan-out consumer) or an MSK cluster's topic
to the ingest function (deployed mode only; docs/import.md).

One mapping per source, shared by the import topics that read it: the ingest function publishes a batch into each
of them, each with its own checkpoint (service/ingestor.py). Kinesis mappings report partial batch failures, bisect
a failing batch, retry without end (a record skipped would be a record lost) and poll each shard with one
invocation at a time, so a shard's batches arrive in order. They start at the oldest record the stream keeps
(TRIM_HORIZON).

Never call this against the emulator: moto would feed a Lambda it cannot run; the local ingest pump plays the
mapping (local/ingest_pump.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, code_of
from chalicelib.store.mappings import list_mappings

if TYPE_CHECKING:
    from mypy_boto3_lambda.type_defs import EventSourceMappingConfigurationTypeDef

log = logging.getLogger(__name__)

_GONE = ("ResourceNotFoundException",)
_BUSY = ("ResourceInUseException", "ResourceConflictException")


class IngestMappings:
    def __init__(self, config: Config) -> None:
        self._lambda = aws.lambda_(config)
        self._function = config.ingest_function
        self._batch = max(1, min(config.ingest_batch_size, 10_000))

    def find(self, source_arn: str) -> list[EventSourceMappingConfigurationTypeDef]:
        return list_mappings(self._lambda, source_arn, self._function)

    def ensure_kinesis(self, source_arn: str) -> str:
        """The mapping from a stream (or consumer) ARN to the ingest function; created when missing."""
        return self._ensure(source_arn, {
            "StartingPosition": "TRIM_HORIZON", "BatchSize": self._batch, "MaximumBatchingWindowInSeconds": 1,
            "FunctionResponseTypes": ["ReportBatchItemFailures"], "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": -1, "ParallelizationFactor": 1})

    def ensure_msk(self, cluster_arn: str, kafka_topic: str) -> str:
        return self._ensure(cluster_arn, {"Topics": [kafka_topic], "StartingPosition": "TRIM_HORIZON",
                                          "BatchSize": self._batch}, kafka_topic)

    def _ensure(self, source_arn: str, settings: dict[str, Any], kafka_topic: str = "") -> str:
        for mapping in self.find(source_arn):
            if mapping.get("State") == "Deleting":
                continue
            if kafka_topic and kafka_topic not in mapping.get("Topics", []):
                continue
            return mapping["UUID"]
        with aws_errors("CreateEventSourceMapping"):
            resp = self._lambda.create_event_source_mapping(
                EventSourceArn=source_arn, FunctionName=self._function, Enabled=True, **settings)
        log.info("created ingestion event source mapping %s for %s", resp["UUID"], source_arn)
        return resp["UUID"]

    def remove(self, source_arn: str, kafka_topic: str = "") -> int:
        removed = 0
        for mapping in self.find(source_arn):
            if kafka_topic and kafka_topic not in mapping.get("Topics", []):
                continue
            try:
                with aws_errors("DeleteEventSourceMapping", allow=_GONE + _BUSY):
                    self._lambda.delete_event_source_mapping(UUID=mapping["UUID"])
                removed += 1
            except ClientError as exc:
                log.info("ingestion event source mapping %s: %s", mapping["UUID"], code_of(exc))
        return removed
