"""Retention settings of topics and subscriptions, read from the resources table (one Scan, driver side).

Items of the table (chalicelib/store/resources.py): topics at ``pk=project#{p}, sk=topic#{id}`` and
subscriptions at ``pk=project#{p}, sk=sub#{id}``, snapshots at ``pk=project#{p}, sk=snap#{id}``, each with its
resource as JSON in ``doc``; the ``pk=topic#...`` items are index copies and are skipped. A topic with a
snapshot keeps its messages at least as long as a snapshot can live (7 days).
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.core import limits
from chalicelib.core.names import Name
from chalicelib.core.replay.seek import SNAPSHOT_LIFETIME
from chalicelib.core.timefmt import parse_duration
from chalicelib.core.wire.models import Subscription, Topic
from spark_emr.plan import RetentionSettings


def _seconds(duration: str | None, default: int) -> int:
    return int(parse_duration(duration, "messageRetentionDuration")) if duration else default


def scan_items(ddb: Any, table: str) -> list[dict[str, Any]]:
    """Every topic and subscription item of the resources table (paginated Scan, projected)."""
    items: list[dict[str, Any]] = []
    paginator = ddb.get_paginator("scan")
    pages = paginator.paginate(
        TableName=table,
        ProjectionExpression="pk, sk, doc",
        FilterExpression="begins_with(pk, :p)",
        ExpressionAttributeValues={":p": {"S": "project#"}},
    )
    for page in pages:
        items.extend(page.get("Items", []))
    return items


def settings_from_items(items: list[dict[str, Any]]) -> RetentionSettings:
    """Pure: the retention floor of each topic from the table's topic and subscription items."""
    topics: dict[str, int] = {}
    subscriptions: dict[str, int] = {}
    longest = 0
    for item in items:
        pk, sk, doc = item["pk"]["S"], item["sk"]["S"], item.get("doc", {}).get("S", "")
        if not doc or not pk.startswith("project#"):
            continue
        project = pk[len("project#"):]
        if sk.startswith("topic#"):
            topic = Topic.model_validate_json(doc)
            name = Name(project, "topics", sk[len("topic#"):]).path
            topics[name] = _seconds(topic.message_retention_duration, 0)
        elif sk.startswith("sub#"):
            sub = Subscription.model_validate_json(doc)
            keep = _seconds(sub.message_retention_duration, limits.RETENTION_DEFAULT)
            subscriptions[sub.topic] = max(subscriptions.get(sub.topic, 0), keep)
            longest = max(longest, keep)
        elif sk.startswith("snap#"):  # a snapshot keeps its topic's messages for up to 7 days
            topic_name = json.loads(doc).get("topic", "")
            subscriptions[topic_name] = max(subscriptions.get(topic_name, 0), SNAPSHOT_LIFETIME)
    return RetentionSettings(topics, subscriptions, longest, known=True)


def read_settings(ddb: Any, table: str) -> RetentionSettings:
    return settings_from_items(scan_items(ddb, table))
