"""What the metrics endpoints read: the metrics job's JSON summary in S3 and a queue's backlog."""

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
_GONE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


class UsageStore:
    def __init__(self, config: Config) -> None:
        self._s3 = aws.client("s3", config)
        self._sqs = aws.client("sqs", config)
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

    def undelivered(self, queue_url: str) -> int:
        """Messages in the queue, waiting or leased (SQS's approximate counts); 0 if the queue is gone."""
        try:
            with aws_errors("SQS GetQueueAttributes", allow=_GONE):
                attrs = self._sqs.get_queue_attributes(
                    QueueUrl=queue_url,
                    AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
                )["Attributes"]
        except ClientError:
            return 0
        waiting = int(attrs.get("ApproximateNumberOfMessages", 0))
        return waiting + int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0))
