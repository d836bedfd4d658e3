"""The names of one stage's resources: unique per account, region and stage.

Tables, queues and functions are per account and region already, so the stage in the name is enough;
the bucket name is global, so it carries the account and region too. In templates and policy files the
account and region are CloudFormation pseudo parameters (``${AWS::AccountId}``, ``${AWS::Region}``),
resolved by ``Fn::Sub`` at deploy time; :func:`resolve` fills them in for code that runs outside
CloudFormation (the deploy command, tests).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chalicelib.core.limits import DEPLOYED_MAX_REQUEST_BYTES

APP = "metro"
# Chalice's names of the app's Lambda functions
FUNCTIONS = ("api_handler", "fanout", "push", "maintenance", "seek_worker", "transform", "export", "ingest")
_STAGE = re.compile(r"^[a-z][a-z0-9]{0,15}$")


def check_stage(stage: str) -> str:
    """Stages are short lowercase names: they go into bucket, table, queue, function and stack names."""
    if not _STAGE.match(stage):
        raise ValueError(f"stage must match {_STAGE.pattern}, got {stage!r}")
    return stage


@dataclass(frozen=True)
class StageNames:
    stage: str

    @property
    def prefix(self) -> str:
        return f"{APP}-{self.stage}"

    @property
    def resources_table(self) -> str:
        return f"{self.prefix}-resources"

    @property
    def messages_table(self) -> str:
        return f"{self.prefix}-messages"

    @property
    def leases_table(self) -> str:
        return f"{self.prefix}-leases"

    @property
    def tables(self) -> tuple[str, str, str]:
        return self.resources_table, self.messages_table, self.leases_table

    @property
    def bucket(self) -> str:
        """With CloudFormation pseudo parameters: bucket names are global."""
        return f"{self.prefix}-${{AWS::AccountId}}-${{AWS::Region}}"

    @property
    def queue_prefix(self) -> str:
        return self.prefix

    def function(self, name: str) -> str:
        """Chalice's function names: ``app-stage`` for the API handler, ``app-stage-name`` for the others."""
        return self.prefix if name == "api_handler" else f"{self.prefix}-{name}"

    @property
    def export_buckets(self) -> str:
        """The buckets export subscriptions may name (a pattern; docs/export.md): the export function's policy
        writes them, and METRO_EXPORT_BUCKETS says the same to the API's check."""
        return f"{self.prefix}-export-*"

    @property
    def export_roles(self) -> str:
        """The roles a serviceAccountEmail may map to (METRO_EXPORT_ROLES): the export function may assume them."""
        return f"{self.prefix}-export-*"

    @property
    def imports(self) -> str:
        """The Kinesis streams, S3 buckets and roles import topics may name (a pattern; docs/import.md): the
        policies read them, and METRO_INGESTION_SOURCES / METRO_INGESTION_ROLES say the same to the API's check."""
        return f"{self.prefix}-import-*"

    @property
    def storage_stack(self) -> str:
        return f"{self.prefix}-storage"

    @property
    def app_stack(self) -> str:
        return f"{self.prefix}-app"

    @property
    def grpc_stack(self) -> str:
        """The opt-in gRPC edge (infra/grpc_stack.py): its stack, and the name of its ECS cluster and service."""
        return f"{self.prefix}-grpc"

    @property
    def dlq(self) -> str:
        """The fan-out mapping's on-failure destination (``_``: outside the subscription queues' ``prefix-*``)."""
        return f"{self.prefix}_fanout-failures"

    def environment(self) -> dict[str, str]:
        """The deployed functions' environment naming the stage's resources (chalicelib/config.py reads it).

        The deploy's template merge sets it, not .chalice/config.json: Chalice's test client runs the app
        with a stage's settings, and the functional tests need the local names there."""
        return {
            "METRO_RESOURCES_TABLE": self.resources_table,
            "METRO_MESSAGES_TABLE": self.messages_table,
            "METRO_LEASES_TABLE": self.leases_table,
            "METRO_BUCKET": self.bucket,
            "METRO_QUEUE_PREFIX": self.queue_prefix,
            "METRO_PUSH_FUNCTION": self.function("push"),
            "METRO_SEEK_FUNCTION": self.function("seek_worker"),
            "METRO_TRANSFORM_FUNCTION": self.function("transform"),
            "METRO_EXPORT_FUNCTION": self.function("export"),
            "METRO_EXPORT_BUCKETS": self.export_buckets,
            "METRO_INGEST_FUNCTION": self.function("ingest"),
            "METRO_INGESTION_SOURCES": f"arn:*:kinesis:*:*:stream/{self.imports},{self.imports}",
            "METRO_INGESTION_ROLES": f"arn:*:iam::*:role/{self.imports}",
            "METRO_MAX_REQUEST_BYTES": str(DEPLOYED_MAX_REQUEST_BYTES),
            "METRO_SECRETS_SSM_PATH": f"/{self.prefix}",
        }


def resolve(text: str, account: str, region: str, partition: str = "aws") -> str:
    """``text`` with the pseudo parameters filled in (what ``Fn::Sub`` does at deploy time)."""
    return (text.replace("${AWS::AccountId}", account).replace("${AWS::Region}", region)
            .replace("${AWS::Partition}", partition))
