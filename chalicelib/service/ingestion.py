"""Import topics' settings: ``ingestionDataSourceSettings`` checked at create and update, each source's ``state``
and the topic's (docs/import.md).

At most one source; Azure Event Hubs and Confluent Cloud are refused (no AWS counterpart here). ARNs are parsed
(core/ingestion.py), the stage's tenancy settings decide which streams, clusters, buckets and roles a topic may
name (deployed: only those listed), and the source is checked through AWS: its state is Google's
(ACTIVE, ..._PERMISSION_DENIED, STREAM_NOT_FOUND, ...), and a source in error makes the topic's state
INGESTION_RESOURCE_ERROR. A source Metro cannot read is not refused: Google keeps such a topic and reports its
state, and so does Metro.
"""

from __future__ import annotations

import fnmatch

from chalicelib.core import ingestion
from chalicelib.core.errors import InvalidArgument, PermissionDenied
from chalicelib.core.ingestion_objects import delimiter_of, format_of
from chalicelib.core.timefmt import parse_timestamp
from chalicelib.core.wire.ingestion import AwsKinesis, AwsMsk, CloudStorage, IngestionDataSourceSettings
from chalicelib.core.wire.models import Topic
from chalicelib.service.context import Context
from chalicelib.store.ingestion import NOT_FOUND, OK, PERMISSION_DENIED

ACTIVE, RESOURCE_ERROR = "ACTIVE", "INGESTION_RESOURCE_ERROR"
_KINESIS = {OK: ACTIVE, PERMISSION_DENIED: "KINESIS_PERMISSION_DENIED", NOT_FOUND: "STREAM_NOT_FOUND"}
_STORAGE = {OK: ACTIVE, PERMISSION_DENIED: "CLOUD_STORAGE_PERMISSION_DENIED", NOT_FOUND: "BUCKET_NOT_FOUND"}
_MSK = {OK: ACTIVE, PERMISSION_DENIED: "MSK_PERMISSION_DENIED", NOT_FOUND: "CLUSTER_NOT_FOUND"}
NO_COUNTERPART = ("{} is not supported by Metro: it has no AWS counterpart here (import from Kinesis, MSK or S3 "
                  "instead, docs/import.md)")


def source_of(settings: IngestionDataSourceSettings | None) -> AwsKinesis | CloudStorage | AwsMsk | None:
    if settings is None:
        return None
    return settings.aws_kinesis or settings.cloud_storage or settings.aws_msk


class IngestionSettings:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def checked(self, topic: Topic) -> Topic:
        """``topic`` with its ingestion settings checked and their states (and the topic's) filled in."""
        settings = topic.ingestion_data_source_settings
        if settings is None or not settings.model_fields_set - {"platform_logs_settings"}:
            return topic.model_copy(update={"state": None})
        if settings.azure_event_hubs is not None:
            raise InvalidArgument(NO_COUNTERPART.format("ingestionDataSourceSettings.azureEventHubs"))
        if settings.confluent_cloud is not None:
            raise InvalidArgument(NO_COUNTERPART.format("ingestionDataSourceSettings.confluentCloud"))
        given = [s for s in (settings.aws_kinesis, settings.cloud_storage, settings.aws_msk) if s is not None]
        if len(given) > 1:
            raise InvalidArgument("ingestionDataSourceSettings may name at most one source")
        if settings.platform_logs_settings is not None:
            ingestion.severity_name(settings.platform_logs_settings.severity)
        if not given:
            return topic.model_copy(update={"state": None})
        source = given[0]
        if isinstance(source, AwsKinesis):
            checked: AwsKinesis | CloudStorage | AwsMsk = self._kinesis(source)
            field = "aws_kinesis"
        elif isinstance(source, CloudStorage):
            checked, field = self._storage(source), "cloud_storage"
        else:
            checked, field = self._msk(source), "aws_msk"
        state = ACTIVE if checked.state == ACTIVE else RESOURCE_ERROR
        return topic.model_copy(update={"state": state, "ingestion_data_source_settings": settings.model_copy(
            update={field: checked})})

    def applied(self, name: str, old: Topic | None, new: Topic | None) -> None:
        """After a topic's create, update or delete: the registry of import topics, and deployed, the event
        source mappings that feed the ingest function (one per source, kept while a topic reads it)."""
        before, after = registration(old), registration(new)
        if before == after:
            return
        if after is not None:
            self.ctx.ingestion.register(name, *after)
            if self.ctx.config.deployed and new is not None and new.state == ACTIVE:  # a source in error: on update
                self._map(*after)
        else:
            self.ctx.ingestion.unregister(name)
        if before is not None and self.ctx.config.deployed:
            still = [r for r in self.ctx.ingestion.registered() if (r[1], r[2]) == before]
            if not still:
                self._unmap(*before)

    def _map(self, kind: str, source: str) -> None:
        if kind == KINESIS:
            self.ctx.ingestion.mappings.ensure_kinesis(source.partition(" ")[2] or source.partition(" ")[0])
        elif kind == MSK:
            cluster, _, kafka = source.partition(" ")
            self.ctx.ingestion.mappings.ensure_msk(cluster, kafka)

    def _unmap(self, kind: str, source: str) -> None:
        if kind == KINESIS:
            self.ctx.ingestion.mappings.remove(source.partition(" ")[2] or source.partition(" ")[0])
        elif kind == MSK:
            cluster, _, kafka = source.partition(" ")
            self.ctx.ingestion.mappings.remove(cluster, kafka)

    # -- per source -------------------------------------------------------------------------------------------
    def _kinesis(self, source: AwsKinesis) -> AwsKinesis:
        stream = ingestion.stream_arn(source.stream_arn)
        if source.consumer_arn:
            ingestion.consumer_arn(source.consumer_arn, stream)
        role = self._role(source.aws_role_arn, "awsKinesis.awsRoleArn")
        self._allowed(stream.value, "awsKinesis.streamArn")
        status = self.ctx.ingestion.check_stream(stream.value, role)
        state = _KINESIS[status]
        if status == OK and source.consumer_arn:
            consumer = self.ctx.ingestion.check_consumer(source.consumer_arn, role)
            state = {OK: ACTIVE, PERMISSION_DENIED: "KINESIS_PERMISSION_DENIED",
                     NOT_FOUND: "CONSUMER_NOT_FOUND"}[consumer]
        return source.model_copy(update={"state": state})

    def _storage(self, source: CloudStorage) -> CloudStorage:
        if not source.bucket:
            raise InvalidArgument("cloudStorage.bucket is required")
        format_of(source)
        delimiter_of(source)
        ingestion.glob_regex(source.match_glob)
        if source.minimum_object_create_time:
            parse_timestamp(source.minimum_object_create_time, "cloudStorage.minimumObjectCreateTime")
        self._allowed(source.bucket, "cloudStorage.bucket")
        return source.model_copy(update={"state": _STORAGE[self.ctx.ingestion.check_bucket(source.bucket)]})

    def _msk(self, source: AwsMsk) -> AwsMsk:
        cluster = ingestion.cluster_arn(source.cluster_arn)
        ingestion.kafka_topic(source.topic)
        role = self._role(source.aws_role_arn, "awsMsk.awsRoleArn")
        self._allowed(cluster.value, "awsMsk.clusterArn")
        if not self.ctx.config.deployed:  # no Kafka broker runs in the local stack (docs/import.md)
            return source.model_copy(update={"state": "CLUSTER_NOT_FOUND"})
        return source.model_copy(update={"state": _MSK[self.ctx.ingestion.check_cluster(cluster.value, role)]})

    # -- tenancy ----------------------------------------------------------------------------------------------
    def _allowed(self, value: str, field: str) -> None:
        if not _permitted(value, self.ctx.config.ingestion_sources, self.ctx.config.deployed):
            raise PermissionDenied(f"{field} {value!r} is not one this stage lets import topics read "
                                   "(METRO_INGESTION_SOURCES)")

    def _role(self, value: str, field: str) -> str:
        if not value:
            return ""
        ingestion.role_arn(value, field)
        if not _permitted(value, self.ctx.config.ingestion_roles, self.ctx.config.deployed):
            raise PermissionDenied(f"{field} {value!r} is not a role this stage lets ingestion assume "
                                   "(METRO_INGESTION_ROLES)")
        return value


KINESIS, STORAGE, MSK = "kinesis", "storage", "msk"


def registration(topic: Topic | None) -> tuple[str, str] | None:
    """(kind, source) of an import topic: ``{stream ARN}`` or ``{stream ARN} {consumer ARN}``, a bucket, or
    ``{cluster ARN} {Kafka topic}``; None for any other topic."""
    source = source_of(topic.ingestion_data_source_settings) if topic is not None else None
    if isinstance(source, AwsKinesis) and source.stream_arn:
        return KINESIS, f"{source.stream_arn} {source.consumer_arn}".strip()
    if isinstance(source, CloudStorage) and source.bucket:
        return STORAGE, source.bucket
    if isinstance(source, AwsMsk) and source.cluster_arn:
        return MSK, f"{source.cluster_arn} {source.topic}"
    return None


def _permitted(value: str, patterns: tuple[str, ...], deployed: bool) -> bool:
    if not patterns:
        return not deployed
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)
