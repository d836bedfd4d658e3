"""The traffic a simulated day replays: topic classes, their subscriptions and consumers, and a diurnal curve.

A topic class stands for ``count`` identical topics (same rate, same subscriptions): per-topic quotas are checked on
one of them, account-wide quotas on all of them together. Rates follow one diurnal curve for the whole account, a
cosine between ``trough`` x peak and the peak at ``peak_hour`` (UTC).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

DAY_S = 86_400


@dataclass(frozen=True)
class Subscriptions:
    """The subscriptions of each topic of a class."""

    pull: int = 1  # pull subscriptions per topic
    pullers: int = 2  # concurrent pull loops per pull subscription, each with one pull outstanding
    max_messages: int = 100  # the pullers' maxMessages
    push: int = 0  # push subscriptions per topic


@dataclass(frozen=True)
class TopicClass:
    name: str
    count: int  # topics in the class
    share: float  # the class's share of the account's messages (shares are normalised to 1)
    message_bytes: int = 1_024
    per_request: int = 10  # messages per publish request (client batching)
    ordered: bool = False  # requests carry ordering keys: the topic's log stays on its own partition key
    subscriptions: Subscriptions = field(default_factory=Subscriptions)

    @property
    def subscriptions_per_topic(self) -> int:
        return self.subscriptions.pull + self.subscriptions.push


@dataclass(frozen=True)
class Handlers:
    """Metro's settings and timings the model uses (chalicelib/config.py defaults; times as bench's duration model)."""

    pull_wait_s: float = 10.0  # METRO_PULL_WAIT_SECONDS: a pull's long poll for its first message
    direct_fanout_max_subscriptions: int = 20  # METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS
    fanout_slice_subscriptions: int = 128  # METRO_FANOUT_SLICE_SUBSCRIPTIONS: wider records go out in slices
    send_threads: int = 32  # chalicelib/store/workers.py MAX_WORKERS: concurrent SendMessageBatch calls
    inline_max_bytes: int = 40 * 1024  # METRO_INLINE_MAX_BYTES: queue bodies carry the data up to this
    log_inline_max_bytes: int = 7 * 1024  # METRO_LOG_INLINE_MAX_BYTES: log items carry small requests' bytes
    push_batch_size: int = 10  # METRO_PUSH_BATCH_SIZE
    push_max_concurrency: int = 5  # METRO_PUSH_MAX_CONCURRENCY (the mapping's MaximumConcurrency)
    push_endpoint_ms: float = 20.0  # the subscriber's webhook answer time
    client_gap_s: float = 0.05  # a puller's own time between a pull's answer and its next pull
    stream_parallelization: int = 4  # infra/template.py ParallelizationFactor
    stream_polls_per_s: float = 4.0  # Lambda's GetRecords polls per shard and second


@dataclass(frozen=True)
class Profile:
    """A day of traffic."""

    name: str
    peak_messages_s: float  # the account's published messages/s at the peak of the day
    topics: tuple[TopicClass, ...]
    trough: float = 0.25  # the night's rate as a fraction of the peak
    peak_hour: float = 14.0  # UTC
    handlers: Handlers = field(default_factory=Handlers)
    table_previous_peak_wcu: float = 0.0  # the messages table's earlier peak (0: a new on-demand table)
    seed: int = 1
    tick_s: float = 1.0  # seconds per arrival step

    def rate(self, t: float) -> float:
        """The account's messages/s at ``t`` seconds after midnight UTC."""
        phase = 2 * math.pi * (t / 3600.0 - self.peak_hour) / 24.0
        return self.peak_messages_s * (self.trough + (1 - self.trough) * (1 + math.cos(phase)) / 2)

    def shares(self) -> list[float]:
        total = sum(c.share for c in self.topics)
        return [c.share / total for c in self.topics]


DEFAULT = Profile(
    name="default",
    peak_messages_s=10_000.0,
    topics=(
        # one busy topic: 3,000 msg/s at the peak in requests of 10, two pull subscriptions of 16 pull loops
        TopicClass("busy", count=1, share=0.3, subscriptions=Subscriptions(pull=2, pullers=16)),
        # 80 ordinary topics, 87 msg/s each at the peak: a pull subscription of 2 loops and a push subscription
        TopicClass("standard", count=80, share=0.695, subscriptions=Subscriptions(pull=1, pullers=2, push=1)),
        # one topic of 25 subscriptions (above the direct fan-out threshold of 20): the stream fans it out
        TopicClass("broadcast", count=1, share=0.005, subscriptions=Subscriptions(pull=25, pullers=1)),
    ),
)

PROFILES: dict[str, Profile] = {
    "default": DEFAULT,
    # one topic publishing 50,000 msg/s at the peak in requests of 10: 5,000 PutObject/s under its S3 prefix and
    # 5,000 writes/s over its log's four partition keys (20,000 msg/s, the profile's peak when the log had one
    # partition key, now passes)
    "hot-topic": Profile("hot-topic", 50_000.0, (
        TopicClass("hot", count=1, share=1.0, subscriptions=Subscriptions(pull=1, pullers=16)),)),
    # 1,200 pull loops waiting on quiet subscriptions: more long pulls than Lambda's account concurrency
    "long-pulls": Profile("long-pulls", 600.0, (
        TopicClass("quiet", count=300, share=1.0, per_request=1, subscriptions=Subscriptions(pull=1, pullers=4)),)),
    # a topic of 10,000 subscriptions: 10,000 SendMessageBatch per publish request in 79 parallel slices, which the
    # topic's stream lane hands out one record after another (the subscribers' pulls are left out: pullers=0)
    "wide-fanout": Profile("wide-fanout", 200.0, (
        TopicClass("wide", count=1, share=1.0, subscriptions=Subscriptions(pull=10_000, pullers=0)),)),
}


def _build(cls: type[Any], data: dict[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {', '.join(sorted(unknown))}")
    return cls(**data)


def profile_from_dict(data: dict[str, Any]) -> Profile:
    """A profile from JSON-shaped data (the fields of :class:`Profile`, topics a list of :class:`TopicClass`)."""
    data = dict(data)
    topics = []
    for raw in data.pop("topics"):
        t = dict(raw)
        t["subscriptions"] = _build(Subscriptions, t.get("subscriptions", {}))
        topics.append(_build(TopicClass, t))
    handlers = _build(Handlers, data.pop("handlers", {}))
    profile: Profile = _build(Profile, {**data, "topics": tuple(topics)})
    return replace(profile, handlers=handlers)


def load(name_or_path: str) -> Profile:
    """A named profile (:data:`PROFILES`) or a JSON file of one."""
    if name_or_path in PROFILES:
        return PROFILES[name_or_path]
    path = Path(name_or_path)
    if path.suffix == ".json" and path.exists():
        return profile_from_dict(json.loads(path.read_text()))
    raise ValueError(f"unknown profile {name_or_path!r}: one of {', '.join(PROFILES)} or a .json file")
