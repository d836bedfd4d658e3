"""What the metrics endpoints read from S3: the metrics job's JSON summary."""

from __future__ import annotations

import json
import logging
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core import usage
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors

log = logging.getLogger(__name__)

_MISSING = ("NoSuchKey", "404", "NoSuchBucket")


class UsageStore:
    def __init__(self, config: Config) -> None:
        self._s3 = aws.s3(config)
        self._bucket = config.bucket

    def summary(self, project: str) -> dict[str, Any] | None:
        """The project's summary as the metrics job last wrote it; None when there is none (the job
        has not run, or the project has no stored message) or it cannot be parsed."""
        try:
            with aws_errors("S3 GetObject (metrics summary)", allow=_MISSING):
                blob = self._s3.get_object(Bucket=self._bucket, Key=usage.summary_key(project))["Body"].read()
        except ClientError:
            return None
        try:
            doc = json.loads(blob)
        except ValueError:
            log.warning("metrics summary of project %s is not JSON; ignored", project)
            return None
        if not usage.valid_summary(doc):
            log.warning("metrics summary of project %s has no metrics list; ignored", project)
            return None
        return dict(doc)
