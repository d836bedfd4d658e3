"""Usage metrics in the ARGO Messaging Service shape (pure; no AWS).

The metrics job (``spark_emr/metrics.py``) writes one summary per project at :func:`summary_key`;
the API answers ``GET /v1/projects/{p}/topics/{t}:metrics``, ``.../subscriptions/{s}:metrics`` and
``GET /v1/projects/{p}:metrics`` from it, adding the few figures that are cheap to read live
(subscription counts, a subscription's backlog). Every answer is ``{"metrics": [metric, ...]}``
where a metric is::

    {"metric": "topic.number_of_messages", "metric_type": "counter", "value_type": "int64",
     "resource_type": "topic", "resource_name": "t", "timeseries": [{"timestamp": ..., "value": 40}],
     "description": "..."}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

SUMMARY_PREFIX = "metrics/summary/"
SUMMARY_VERSION = 2

# name -> (metric_type, description); the names and descriptions follow AMS where AMS has the metric.
METRICS: dict[str, tuple[str, str]] = {
    "project.number_of_topics": ("counter", "Counter that displays the number of topics belonging to the "
                                            "specific project"),
    "project.number_of_subscriptions": ("counter", "Counter that displays the number of subscriptions belonging "
                                                   "to the specific project"),
    "project.number_of_messages": ("counter", "Counter that displays the number of messages published to the "
                                              "project's topics and still stored (archive and raw objects)"),
    "project.number_of_bytes": ("counter", "Counter that displays the total size of data (in bytes) published to "
                                           "the project's topics and still stored"),
    "project.number_of_daily_messages": ("counter", "A collection of counters that represents the total number of "
                                                    "messages published each day to all of the project's topics"),
    "topic.number_of_subscriptions": ("counter", "Counter that displays the number of subscriptions belonging to "
                                                 "a specific topic"),
    "topic.number_of_messages": ("counter", "Counter that displays the number of messages published to the "
                                            "specific topic and still stored (archive and raw objects)"),
    "topic.number_of_bytes": ("counter", "Counter that displays the total size of data (in bytes) published to "
                                         "the specific topic and still stored"),
    "topic.number_of_daily_messages": ("counter", "A collection of counters that represents the total number of "
                                                  "messages published each day to a specific topic"),
    "subscription.number_of_undelivered_messages": ("gauge", "Messages of the subscription not acknowledged yet "
                                                             "(waiting or leased), read from its queue now"),
}


def summary_key(project: str) -> str:
    return f"{SUMMARY_PREFIX}{project}.json"


def timestamp(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_timestamp(epoch_seconds: float) -> str:
    return timestamp(datetime.fromtimestamp(epoch_seconds, tz=timezone.utc))


def metric(name: str, resource_type: str, resource_name: str, points: Iterable[tuple[str, int]]) -> dict[str, Any]:
    """One AMS metric; ``points`` are ``(timestamp, value)`` pairs."""
    metric_type, description = METRICS[name]
    return {
        "metric": name,
        "metric_type": metric_type,
        "value_type": "int64",
        "resource_type": resource_type,
        "resource_name": resource_name,
        "timeseries": [{"timestamp": ts, "value": int(v)} for ts, v in points],
        "description": description,
    }


def gauge(name: str, resource_type: str, resource_name: str, value: int, ts: str) -> dict[str, Any]:
    """A metric with one point (a counter read now, or a total as of the summary's time)."""
    return metric(name, resource_type, resource_name, [(ts, value)])


def _find(summary: Mapping[str, Any] | None, name: str, resource_type: str,
          resource_name: str) -> dict[str, Any] | None:
    for m in (summary or {}).get("metrics", []):
        if (isinstance(m, dict) and m.get("metric") == name and m.get("resource_type") == resource_type
                and m.get("resource_name") == resource_name):
            return m
    return None


def stored(summary: Mapping[str, Any] | None, name: str, resource_type: str, resource_name: str,
           default_ts: str, daily: bool = False) -> dict[str, Any]:
    """A metric of the summary, or its zero value when the summary lacks it (no job run yet, no
    message published): a one-point zero for a total, an empty series for a daily metric."""
    found = _find(summary, name, resource_type, resource_name)
    if found is not None:
        return metric(name, resource_type, resource_name,
                      [(str(p["timestamp"]), int(p["value"])) for p in found.get("timeseries", [])])
    ts = str((summary or {}).get("generated") or default_ts)
    return metric(name, resource_type, resource_name, [] if daily else [(ts, 0)])


def valid_summary(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("metrics"), list)


def topic_metrics(summary: Mapping[str, Any] | None, topic_id: str, subscriptions: int,
                  now_ts: str) -> dict[str, Any]:
    return {"metrics": [
        gauge("topic.number_of_subscriptions", "topic", topic_id, subscriptions, now_ts),
        stored(summary, "topic.number_of_messages", "topic", topic_id, now_ts),
        stored(summary, "topic.number_of_bytes", "topic", topic_id, now_ts),
        stored(summary, "topic.number_of_daily_messages", "topic", topic_id, now_ts, daily=True),
    ]}


def project_metrics(summary: Mapping[str, Any] | None, project: str, topics: int, subscriptions: int,
                    now_ts: str) -> dict[str, Any]:
    return {"metrics": [
        gauge("project.number_of_topics", "project", project, topics, now_ts),
        gauge("project.number_of_subscriptions", "project", project, subscriptions, now_ts),
        stored(summary, "project.number_of_messages", "project", project, now_ts),
        stored(summary, "project.number_of_bytes", "project", project, now_ts),
        stored(summary, "project.number_of_daily_messages", "project", project, now_ts, daily=True),
    ]}


def subscription_metrics(summary: Mapping[str, Any] | None, subscription_id: str, undelivered: int,
                         now_ts: str) -> dict[str, Any]:
    """Live backlog, plus whatever the summary holds for the subscription (nothing today: deliveries
    and acks are not recorded in S3, so the job cannot derive them)."""
    extra = [m for m in (summary or {}).get("metrics", [])
             if isinstance(m, dict) and m.get("resource_type") == "subscription"
             and m.get("resource_name") == subscription_id]
    return {"metrics": [
        gauge("subscription.number_of_undelivered_messages", "subscription", subscription_id, undelivered, now_ts),
        *extra,
    ]}


def build_summary(project: str, rows: Iterable[Mapping[str, Any]], generated: datetime) -> dict[str, Any]:
    """The job's summary of one project from daily rows ``{"topic", "day" (date), "messages", "bytes"}``:
    per topic its stored totals and daily messages, per project the same. Resource names are short
    ids, as AMS names them."""
    gen = timestamp(generated)
    daily: dict[str, dict[str, int]] = {}
    totals: dict[str, list[int]] = {}
    pdaily: dict[str, int] = {}
    for r in rows:
        topic_id = str(r["topic"]).rsplit("/", 1)[-1]
        day = f"{str(r['day'])[:10]}T00:00:00Z"
        n, b = int(r["messages"]), int(r["bytes"])
        daily.setdefault(topic_id, {})[day] = daily.get(topic_id, {}).get(day, 0) + n
        t = totals.setdefault(topic_id, [0, 0])
        t[0] += n
        t[1] += b
        pdaily[day] = pdaily.get(day, 0) + n
    metrics: list[dict[str, Any]] = []
    for topic_id in sorted(daily):
        metrics.append(gauge("topic.number_of_messages", "topic", topic_id, totals[topic_id][0], gen))
        metrics.append(gauge("topic.number_of_bytes", "topic", topic_id, totals[topic_id][1], gen))
        metrics.append(metric("topic.number_of_daily_messages", "topic", topic_id, sorted(daily[topic_id].items())))
    metrics.append(gauge("project.number_of_messages", "project", project, sum(t[0] for t in totals.values()), gen))
    metrics.append(gauge("project.number_of_bytes", "project", project, sum(t[1] for t in totals.values()), gen))
    metrics.append(metric("project.number_of_daily_messages", "project", project, sorted(pdaily.items())))
    return {"v": SUMMARY_VERSION, "project": project, "generated": gen, "metrics": metrics}
