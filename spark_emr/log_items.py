"""Publish requests whose bytes live in their messages-table item (keys ending ``.inline``, no S3 object).

The service keeps a small request's raw bytes in the log item's ``body`` attribute (docs/storage.md). The
jobs find those requests with one Query per partition of the topic's log and time range (the driver: keys and
sizes only) and read their bytes with BatchGetItem inside the tasks, so compaction and replay treat them like
raw objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from chalicelib.core.log_keys import BODY, log_partitions, log_shard, partition_key
from chalicelib.core.replay import archive_layout as layout
from spark_emr import common, settings
from spark_emr.listing import InlineKeys

T = TypeVar("T")

BATCH_GET_KEYS = 100  # BatchGetItem's limit per call


def log_keys(ddb: Any, table: str, topic: str, start_ms: int, end_ms: int,
             inline_only: bool = True) -> list[tuple[str, int]]:
    """(key, body bytes) of the topic's requests published in ``[start_ms, end_ms)``, only the inline-logged
    ones unless ``inline_only`` is false: one Query (paginated) per partition of the topic's log."""
    if end_ms <= start_ms:
        return []
    found: list[tuple[str, int]] = []
    for partition in log_partitions(topic):
        kwargs: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": "topic = :t AND rid BETWEEN :a AND :b",
            "ProjectionExpression": "#k, #n",
            "ExpressionAttributeNames": {"#k": "key", "#n": "bytes"},
            "ExpressionAttributeValues": {":t": {"S": partition}, ":a": {"S": f"{max(start_ms, 0):013d}"},
                                          ":b": {"S": f"{end_ms - 1:013d}~"}},
        }
        if inline_only:
            kwargs["FilterExpression"] = "attribute_exists(#body)"
            kwargs["ExpressionAttributeNames"]["#body"] = BODY
        while True:
            resp = ddb.query(**kwargs)
            found.extend((item["key"]["S"], int(item.get("bytes", {}).get("N", 0))) for item in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    return sorted(found)


def read_inline(ddb: Any, table: str, keys: Iterable[str]) -> Iterator[tuple[str, bytes | None]]:
    """``(key, raw bytes)`` of inline-logged requests, None for one whose item is gone (expired by its TTL)."""
    wanted = list(keys)
    for chunk in common.chunks(wanted, BATCH_GET_KEYS):
        got = _batch_get(ddb, table, chunk)
        for key in chunk:
            yield key, got.get(key)


def _batch_get(ddb: Any, table: str, keys: list[str]) -> dict[str, bytes]:
    """The bytes of these requests' items: first where an unordered request lives (the partition its request id
    names), then, for the rest, the topic's own partition (requests with ordering keys)."""
    found = _get_items(ddb, table, keys, ordered=False)
    return found | _get_items(ddb, table, [k for k in keys if k not in found], ordered=True)


def _get_items(ddb: Any, table: str, keys: list[str], ordered: bool) -> dict[str, bytes]:
    if not keys:
        return {}
    ids = [layout.parse_raw_key(k) for k in keys]
    request: dict[str, Any] = {table: {
        "Keys": [{"topic": {"S": partition_key(rk.topic, log_shard(rk.request_id, ordered))},
                  "rid": {"S": rk.request_id}} for rk in ids],
        "ProjectionExpression": "#k, #body", "ExpressionAttributeNames": {"#k": "key", "#body": BODY}}}
    out: dict[str, bytes] = {}
    while request:
        resp = ddb.batch_get_item(RequestItems=request)
        for item in resp.get("Responses", {}).get(table, []):
            if BODY in item:
                out[item["key"]["S"]] = bytes(item[BODY]["B"])
        request = resp.get("UnprocessedKeys") or {}
    return out


def search_start_ms(raw: Iterable[tuple[str, int]], archive: Iterable[tuple[str, int]], now_ms: int,
                    lookback_hours: int) -> int:
    """Where compaction looks for a topic's inline-logged requests: from its newest archived hour (archived in
    part, maybe), or an older hour that still has raw objects to archive, but never further back than
    ``lookback_hours`` (a request older than that stays in the table only, where the service reads it)."""
    archived = [layout.hour_ms(ak.hour) for ak in _parsed(layout.parse_archive_key, archive) if ak.is_manifest]
    pending = [layout.hour_ms(rk.hour) for rk in _parsed(layout.parse_raw_key, raw)]
    start = min([max(archived, default=0), *pending])  # never archived: from the lookback's start
    return max(start, now_ms - lookback_hours * layout.HOUR_MS)


def _parsed(parse: Callable[[str], T], keys: Iterable[tuple[str, int]]) -> Iterator[T]:
    for key, _ in keys:
        try:
            yield parse(key)
        except ValueError:
            continue


def sources(cfg: common.AwsConfig, resources_table: str, project: str, selected: bool, cutoff_ms: int,
            lookback_hours: int) -> tuple[list[str], InlineKeys | None]:
    """For compaction's listing_rounds, with a messages table: the topics to list beyond S3's (those of the
    resources table, unless the command line ``selected`` topics), and the lister of a topic's inline-logged
    requests published at or before ``cutoff_ms``, from where they may still lack an archive."""
    if not cfg.messages_table:
        return [], None
    ddb = common.client("dynamodb", cfg)
    more = resource_topics(ddb, resources_table, project) if resources_table and not selected else []

    def keys(topic: str, raw: list[tuple[str, int]], archive: list[tuple[str, int]]) -> list[tuple[str, int]]:
        start = search_start_ms(raw, archive, cutoff_ms, lookback_hours)
        return log_keys(ddb, cfg.messages_table, topic, start, cutoff_ms + 1)

    return more, keys


def resource_topics(ddb: Any, table: str, project: str) -> list[str]:
    """Every topic of the resources table (of ``project`` only, when given): topics that publish only small
    requests have nothing in S3 until their first compaction."""
    topics = []
    for item in settings.scan_items(ddb, table):
        pk, sk = item["pk"]["S"], item["sk"]["S"]
        name = pk[len("project#"):]
        if sk.startswith("topic#") and (not project or name == project):
            topics.append(layout.topic_name(name, sk[len("topic#"):]))
    return topics
