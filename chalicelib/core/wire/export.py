"""Export subscriptions in Google's JSON shape: ``cloudStorageConfig``, written to S3 (docs/export.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import StrictBool

from chalicelib.core.access.references import OUTPUT_ONLY, Checked
from chalicelib.core.wire.base import Wire

EXPORT_BUCKET = Checked("an S3 bucket Metro's export role may write, checked at create and update (service/exports.py)")
EXPORT_IDENTITY = Checked("an identity mapped to a role ARN by the stage's settings (service/exports.py)")


class TextConfig(Wire):
    pass


class AvroConfig(Wire):
    write_metadata: StrictBool = False
    use_topic_schema: StrictBool = False


class CloudStorageConfig(Wire):
    bucket: Annotated[str, EXPORT_BUCKET] = ""
    filename_prefix: str = ""
    filename_suffix: str = ""
    filename_datetime_format: str = ""
    text_config: TextConfig | None = None
    avro_config: AvroConfig | None = None
    max_duration: str | None = None
    max_bytes: int = 0  # int64: a JSON string or number
    max_messages: int = 0  # int64
    state: Annotated[str | int | None, OUTPUT_ONLY] = None
    service_account_email: Annotated[str, EXPORT_IDENTITY] = ""
