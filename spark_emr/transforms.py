"""Pure DataFrame transforms of the jobs (no I/O): tested on small in-memory DataFrames.

Input rows are *stage* rows (see :mod:`spark_emr.records`): ``topic, message_id, publish_time,
ordering_key, attributes, data, raw_key, request_id, offset``.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def with_hour(df: DataFrame) -> DataFrame:
    """Add ``hour``: the UTC hour of the publish time (the archive folder of the row)."""
    return df.withColumn("hour", F.date_trunc("hour", F.col("publish_time")))


def dedupe(df: DataFrame) -> DataFrame:
    """One row per (topic, message id)."""
    return df.dropDuplicates(["topic", "message_id"])


def in_range(df: DataFrame, start: datetime, end: datetime) -> DataFrame:
    """Rows published in ``[start, end)``."""
    return df.where((F.col("publish_time") >= F.lit(start)) & (F.col("publish_time") < F.lit(end)))


def replay_order(df: DataFrame, partitions: int) -> DataFrame:
    """Rows of one ordering key together and in publish order (rows without a key spread freely):
    each partition is then sent sequentially, which keeps every ordering key's order."""
    group = F.when(F.coalesce(F.col("ordering_key"), F.lit("")) != "", F.col("ordering_key")).otherwise(
        F.col("message_id")
    )
    return (
        df.withColumn("group", group)
        .repartition(max(1, partitions), "group")
        .sortWithinPartitions("publish_time", "message_id")
        .drop("group")
    )


def usage_rows_schema() -> str:
    return "project string, topic string, hour timestamp, messages long, bytes long"


def daily_usage(usage: DataFrame) -> DataFrame:
    """Per (project, topic, day): messages and bytes published, from hourly usage rows
    ``(project, topic, hour, messages, bytes)``."""
    return (
        usage.withColumn("day", F.to_date(F.col("hour")))
        .groupBy("project", "topic", "day")
        .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"))
        .orderBy("project", "topic", "day")
    )


def stage_usage(df: DataFrame) -> DataFrame:
    """Hourly usage rows from stage rows (messages, body bytes), the same shape as usage from
    manifests and raw headers."""
    return (
        with_hour(df)
        .withColumn("project", F.split(F.col("topic"), "/").getItem(1))
        .groupBy("project", "topic", "hour")
        .agg(F.count(F.lit(1)).alias("messages"), F.sum(F.length(F.col("data"))).cast("long").alias("bytes"))
    )
