"""The age of a subscription queue's oldest unacknowledged message: SQS publishes it to CloudWatch
(``AWS/SQS ApproximateAgeOfOldestMessage``, every minute, a few minutes late); it is not a queue attribute.
One GetMetricStatistics per read; None where CloudWatch has no figure (an idle queue, or the emulator)."""

from __future__ import annotations

import datetime
import logging

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors
from chalicelib.store.push_state import queue_name_of

log = logging.getLogger(__name__)
WINDOW_SECONDS = 900  # SQS's metrics arrive a few minutes late: look back a quarter of an hour


class QueueAge:
    def __init__(self, config: Config) -> None:
        self._config = config

    def oldest_seconds(self, queue_url: str, now: float) -> int | None:
        """The latest minute's maximum age of the queue's oldest message, in seconds, if CloudWatch has one."""
        end = datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc)
        try:
            with aws_errors("CloudWatch GetMetricStatistics (queue age)"):
                points = aws.client("cloudwatch", self._config).get_metric_statistics(
                    Namespace="AWS/SQS", MetricName="ApproximateAgeOfOldestMessage",
                    Dimensions=[{"Name": "QueueName", "Value": queue_name_of(queue_url)}],
                    StartTime=end - datetime.timedelta(seconds=WINDOW_SECONDS), EndTime=end, Period=60,
                    Statistics=["Maximum"])["Datapoints"]
        except Exception:  # a metrics read must not fail: the figure is left out
            log.warning("age of the oldest message of %s not read", queue_url, exc_info=True)
            return None
        if not points:
            return None
        return int(max(points, key=lambda p: p["Timestamp"])["Maximum"])
