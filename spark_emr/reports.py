"""Pure shaping of job outputs: the ARGO-style metrics summary and the daily metrics table."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa

DAILY_SCHEMA = pa.schema(
    [
        pa.field("project", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("day", pa.date32()),
        pa.field("messages", pa.int64()),
        pa.field("bytes", pa.int64()),
    ]
)

DESCRIPTIONS = {
    "topic.number_of_messages": "Counter that displays the number of messages published to the topic per day",
    "topic.number_of_bytes": "Counter that displays the total size of data (in bytes) published to the topic per day",
    "project.number_of_messages": "Counter that displays the number of messages published to the project per day",
    "project.number_of_bytes": "Counter that displays the size of data (in bytes) published to the project per day",
}


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def day_timestamp(d: date) -> str:
    return datetime(d.year, d.month, d.day, tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metric(name: str, resource_type: str, resource_name: str, points: Mapping[date, int]) -> dict[str, Any]:
    return {
        "metric": name,
        "metric_type": "counter",
        "value_type": "int64",
        "resource_type": resource_type,
        "resource_name": resource_name,
        "timeseries": [{"timestamp": day_timestamp(d), "value": int(v)} for d, v in sorted(points.items())],
        "description": DESCRIPTIONS[name],
    }


def summary(project: str, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """ARGO Messaging Service style metrics of one project from daily rows
    ``{"topic": "projects/p/topics/t", "day": date, "messages": n, "bytes": n}``.

    Resource names are short topic ids, as ARGO names them; one point per day.
    """
    msgs: dict[str, dict[date, int]] = defaultdict(dict)
    size: dict[str, dict[date, int]] = defaultdict(dict)
    pmsgs: dict[date, int] = defaultdict(int)
    pbytes: dict[date, int] = defaultdict(int)
    for r in rows:
        topic_id = str(r["topic"]).rsplit("/", 1)[-1]
        d = _day(r["day"])
        msgs[topic_id][d] = msgs[topic_id].get(d, 0) + int(r["messages"])
        size[topic_id][d] = size[topic_id].get(d, 0) + int(r["bytes"])
        pmsgs[d] += int(r["messages"])
        pbytes[d] += int(r["bytes"])
    metrics: list[dict[str, Any]] = []
    for topic_id in sorted(msgs):
        metrics.append(_metric("topic.number_of_messages", "topic", topic_id, msgs[topic_id]))
        metrics.append(_metric("topic.number_of_bytes", "topic", topic_id, size[topic_id]))
    if pmsgs:
        metrics.append(_metric("project.number_of_messages", "project", project, pmsgs))
        metrics.append(_metric("project.number_of_bytes", "project", project, pbytes))
    return {"metrics": metrics}


def daily_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    rows = list(rows)
    return pa.Table.from_pydict(
        {
            "project": [r["project"] for r in rows],
            "topic": [r["topic"] for r in rows],
            "day": [_day(r["day"]) for r in rows],
            "messages": [int(r["messages"]) for r in rows],
            "bytes": [int(r["bytes"]) for r in rows],
        },
        schema=DAILY_SCHEMA,
    )


def daily_key(project: str, d: date) -> str:
    return f"metrics/daily/{project}/{d.year:04d}/{d.month:02d}/{d.day:02d}.parquet"


def summary_key(project: str) -> str:
    return f"metrics/summary/{project}.json"
