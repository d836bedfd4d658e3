"""Import topics in Google's JSON shape: ``ingestionDataSourceSettings`` (docs/import.md)."""

from __future__ import annotations

from typing import Annotated

from chalicelib.core.access.references import OUTPUT_ONLY, Checked
from chalicelib.core.wire.base import Wire

INGESTION_SOURCE = Checked("a stream, cluster or bucket Metro's ingestion role may read (service/ingestion.py)")
INGESTION_ROLE = Checked("a role ARN the stage allows ingestion to assume (service/ingestion.py)")


class AwsKinesis(Wire):
    state: Annotated[str | int | None, OUTPUT_ONLY] = None
    stream_arn: Annotated[str, INGESTION_SOURCE] = ""
    consumer_arn: Annotated[str, INGESTION_SOURCE] = ""
    aws_role_arn: Annotated[str, INGESTION_ROLE] = ""
    gcp_service_account: str = ""


class TextFormat(Wire):
    delimiter: str | None = None


class AvroFormat(Wire):
    pass


class PubSubAvroFormat(Wire):
    pass


class CloudStorage(Wire):
    state: Annotated[str | int | None, OUTPUT_ONLY] = None
    bucket: Annotated[str, INGESTION_SOURCE] = ""
    text_format: TextFormat | None = None
    avro_format: AvroFormat | None = None
    pubsub_avro_format: PubSubAvroFormat | None = None
    minimum_object_create_time: str | None = None
    match_glob: str = ""


class AwsMsk(Wire):
    state: Annotated[str | int | None, OUTPUT_ONLY] = None
    cluster_arn: Annotated[str, INGESTION_SOURCE] = ""
    topic: Annotated[str, INGESTION_SOURCE] = ""  # the Kafka topic of the cluster, not a Pub/Sub topic
    aws_role_arn: Annotated[str, INGESTION_ROLE] = ""
    gcp_service_account: str = ""


class PlatformLogsSettings(Wire):
    severity: str | int | None = None


class IngestionDataSourceSettings(Wire):
    aws_kinesis: AwsKinesis | None = None
    cloud_storage: CloudStorage | None = None
    azure_event_hubs: dict[str, object] | None = None  # refused: no AWS counterpart (service/ingestion.py)
    aws_msk: AwsMsk | None = None
    confluent_cloud: dict[str, object] | None = None  # refused likewise
    platform_logs_settings: PlatformLogsSettings | None = None
