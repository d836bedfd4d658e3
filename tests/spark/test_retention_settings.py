"""Retention from the topics' and subscriptions' own settings (the resources table on moto DynamoDB)."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import boto3
import pytest

from chalicelib.core import limits
from chalicelib.core.wire.models import Subscription, Topic
from spark_emr import plan, retention, settings
from tests.spark.helpers import list_keys, publish

HOUR_MS = 3_600_000
DAY = 86_400
NOW = 1_780_000_000.0  # the job's clock (epoch seconds)
NOW_MS = int(NOW * 1000)
BACKLOGGED = "projects/proj/topics/short-with-backlog"  # topic keeps 10 minutes, its subscription 2 days
UNREAD = "projects/proj/topics/short-no-subscription"  # topic keeps 10 minutes, nobody subscribes
DELETED = "projects/proj/topics/deleted"  # not in the table any more; a detached subscription keeps 1 day


def topic_item(name: str, retention_duration: str | None) -> dict[str, Any]:
    project, topic_id = name.split("/")[1], name.split("/")[3]
    doc = Topic(name=name, message_retention_duration=retention_duration).to_wire()
    return {"pk": {"S": f"project#{project}"}, "sk": {"S": f"topic#{topic_id}"}, "doc": {"S": json.dumps(doc)},
            "created": {"N": "1"}}


def sub_items(name: str, topic: str, retention_duration: str | None) -> list[dict[str, Any]]:
    project, sub_id = name.split("/")[1], name.split("/")[3]
    doc = json.dumps(Subscription(name=name, topic=topic, message_retention_duration=retention_duration).to_wire())
    own = {"pk": {"S": f"project#{project}"}, "sk": {"S": f"sub#{sub_id}"}, "doc": {"S": doc}}
    index = {"pk": {"S": f"topic#{topic}"}, "sk": {"S": f"sub#{name}"}, "doc": {"S": doc}}
    return [own, index]


ITEMS = [
    topic_item(BACKLOGGED, "600s"),
    topic_item(UNREAD, "600s"),
    topic_item("projects/proj/topics/plain", None),
    *sub_items("projects/proj/subscriptions/backlog", BACKLOGGED, f"{2 * DAY}s"),
    *sub_items("projects/proj/subscriptions/plain", "projects/proj/topics/plain", None),
    *sub_items("projects/proj/subscriptions/orphan", "_deleted-topic_", f"{DAY}s"),
]


def test_settings_floor_each_topic_by_its_own_and_its_subscriptions_retention() -> None:
    found = settings.settings_from_items(ITEMS)
    assert found.floor(BACKLOGGED) == 2 * DAY
    assert found.floor(UNREAD) == 600
    assert found.floor("projects/proj/topics/plain") == limits.RETENTION_DEFAULT  # a subscription's default
    assert found.floor(DELETED) == limits.RETENTION_DEFAULT  # the longest subscription anywhere
    # an override shortens down to the floor, never below; it may lengthen
    assert plan.retention_for(BACKLOGGED, 600, {BACKLOGGED: 60}, found) == 2 * DAY
    assert plan.retention_for(UNREAD, 7 * DAY, {}, found) == 600
    assert plan.retention_for(UNREAD, 600, {"projects/proj": 3 * DAY}, found) == 3 * DAY
    assert plan.retention_for(BACKLOGGED, 600, {BACKLOGGED: 60}) == 60  # no table read: the command line alone


@pytest.fixture()
def resources_table(moto_endpoint: str) -> str:
    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    name = f"metro-resources-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    for item in ITEMS:
        ddb.put_item(TableName=name, Item=item)
    return name


@pytest.mark.spark
def test_a_short_topic_retention_keeps_what_a_subscription_backlog_needs(
    spark: Any, s3: Any, bucket: str, resources_table: str
) -> None:
    rng = random.Random(3)
    hour = NOW_MS - NOW_MS % HOUR_MS
    keys = {}
    for name, topic, ms in [
        ("backlog-recent", BACKLOGGED, hour - 3 * HOUR_MS),
        ("backlog-old", BACKLOGGED, hour - 3 * DAY * 1000),
        ("unread-recent", UNREAD, hour - 3 * HOUR_MS),
        ("deleted-recent", DELETED, hour - 3 * HOUR_MS),
        ("deleted-old", DELETED, hour - 9 * DAY * 1000),
    ]:
        keys[name] = publish(s3, bucket, topic, ms, 2, rng=rng)[0]
    overrides = {BACKLOGGED: 600, UNREAD: 600, DELETED: 600}

    # positive control: the command line alone would delete every one of them
    alone = retention.retention(spark, bucket, 600, overrides, now=NOW, dry_run=True)
    assert alone["raw_objects"] == 5 and not alone["settings_from_table"]

    report = retention.retention(spark, bucket, 600, overrides, now=NOW, resources_table=resources_table)
    assert report["settings_from_table"] and report["raw_objects"] == 3
    left = set(list_keys(s3, bucket, "raw/"))
    assert left == {keys["backlog-recent"], keys["deleted-recent"]}
    assert report["topics"][BACKLOGGED]["retention_seconds"] == 2 * DAY
    assert report["topics"][UNREAD]["retention_seconds"] == 600
    assert report["topics"][DELETED]["retention_seconds"] == limits.RETENTION_DEFAULT


def test_a_snapshot_keeps_its_topic_seven_days() -> None:
    snap = {"pk": {"S": "project#proj"}, "sk": {"S": "snap#s1"},
            "doc": {"S": json.dumps({"name": "projects/proj/snapshots/s1", "topic": UNREAD})}}
    assert settings.settings_from_items([*ITEMS, snap]).floor(UNREAD) == 7 * DAY
