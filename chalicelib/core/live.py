"""Live usage counters (pure): what a process counts between two flushes, and the AMS metrics read back.

Publish, pull, acknowledge and push add to an in-process tally; the tally is written at most once per
``METRO_COUNTER_FLUSH_SECONDS`` per process, one DynamoDB update per topic or subscription it touched, never
one per message or request (store/counters.py). A process that ends before its next flush loses its last
tally: the counters are usage figures, not accounting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PUBLISHED, BYTES, DELIVERED, ACKED = "published", "bytes", "delivered", "acked"
# Messages sent to a subscription's queue in packs, and the queue messages that carried them (core/queueing/packs.py).
PACKED, PACKS = "packed", "packs"
# Which counter drives a resource's rate: messages published to a topic, acknowledged on a subscription.
RATE_OF = {"topic": PUBLISHED, "subscription": ACKED}

DESCRIPTIONS = {
    "topic.number_of_published_messages": "Counter of the messages published to the topic since it was created "
                                          "(live; flushed every few seconds)",
    "topic.number_of_published_bytes": "Counter of the bytes published to the topic since it was created (live)",
    "topic.publishing_rate": "Messages published per second over the last flushed interval",
    "subscription.number_of_delivered_messages": "Counter of the deliveries of the subscription's messages "
                                                 "(pull and push; redeliveries included; live)",
    "subscription.number_of_acknowledged_messages": "Counter of the messages acknowledged on the subscription "
                                                    "(live)",
    "subscription.consumption_rate": "Messages acknowledged per second over the last flushed interval",
    "subscription.number_of_waiting_messages": "Messages waiting in the subscription's queue, read now",
    "subscription.number_of_inflight_messages": "Messages delivered and not acknowledged yet (leased), read now",
    "subscription.oldest_unacked_message_age": "Seconds since the oldest unacknowledged message was published, as "
                                               "SQS last reported it to CloudWatch (none when idle or local)",
    "project.number_of_users": "Counter that displays the number of users that are members of the project",
    "project.number_of_published_messages": "Counter of the messages published to the project's topics (live)",
}


@dataclass
class Tally:
    """Counts per (project, resource key) since the last flush; the keys are the store's (store/counters.py)."""

    started: float
    counts: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)

    def add(self, project: str, key: str, values: Mapping[str, int]) -> None:
        mine = self.counts.setdefault((project, key), {})
        for name, n in values.items():
            mine[name] = mine.get(name, 0) + n


def metric(name: str, resource_type: str, resource_name: str, value: float, timestamp: str) -> dict[str, Any]:
    """One live metric in AMS's shape (a rate is a float64, everything else an int64 counter or gauge)."""
    rate = name.endswith("_rate")
    return {"metric": name, "metric_type": "rate" if rate else "counter",
            "value_type": "float64" if rate else "int64", "resource_type": resource_type,
            "resource_name": resource_name,
            "timeseries": [{"timestamp": timestamp, "value": round(value, 3) if rate else int(value)}],
            "description": DESCRIPTIONS[name]}


def unknown(name: str, resource_type: str, resource_name: str) -> dict[str, Any]:
    """A metric with no point: the figure is not available now."""
    return {**metric(name, resource_type, resource_name, 0, ""), "timeseries": []}


def per_queue_message(stored: Mapping[str, Any]) -> float:
    """Messages per queue message of a subscription: 1 without packs, else what its packs carried on average
    (so SQS's counts of queue messages estimate its messages)."""
    packs = float(stored.get(PACKS, 0) or 0)
    return float(stored.get(PACKED, 0) or 0) / packs if packs > 0 else 1.0


def rate(stored: Mapping[str, Any]) -> float:
    """Messages per second over the last flushed interval of the resource."""
    span = float(stored.get("rate_span", 0) or 0)
    return float(stored.get("rate_n", 0) or 0) / span if span > 0 else 0.0
