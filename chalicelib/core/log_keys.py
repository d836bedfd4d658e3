"""Where a topic's publish requests sit in the messages table (pure): the partition keys of its log.

The store (chalicelib/store/log.py) and the Spark jobs (spark_emr/log_items.py) both name them from here.
"""

from __future__ import annotations

import zlib

__all__ = ["BODY", "LOG_SHARDS", "log_partitions", "log_shard", "partition_key"]

BODY = "body"  # the raw bytes of a request logged inline (no S3 object)
# A topic's log spreads over partitions: the topic's own (key ``topic``) holds the requests with ordering keys, so
# that the stream hands them to fan-out in publish order, and LOG_SHARDS more (``{topic}#{n}``, n from the request
# id) hold the rest. Every read by topic reads all of them and merges by request id.
LOG_SHARDS = 4


def log_shard(request_id: str, ordered: bool) -> int:
    """The partition of a publish request: 0 (the topic's own) when it has an ordering key, else 1..LOG_SHARDS."""
    return 0 if ordered else 1 + zlib.crc32(request_id.encode()) % LOG_SHARDS


def partition_key(topic: str, shard: int) -> str:
    return f"{topic}#{shard}" if shard else topic


def log_partitions(topic: str) -> list[str]:
    """Every partition key of a topic's log."""
    return [partition_key(topic, shard) for shard in range(LOG_SHARDS + 1)]
