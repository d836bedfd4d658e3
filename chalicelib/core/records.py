"""Records as Metro stores them: resources (the Google-shaped spec plus Metro's own bookkeeping) and the
message log's entries. Their DynamoDB marshalling lives in store/."""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.core.names import DELETED_TOPIC
from chalicelib.core.wire.models import Subscription, Topic


@dataclass(frozen=True)
class TopicRecord:
    spec: Topic
    created: float


@dataclass(frozen=True)
class SubscriptionRecord:
    spec: Subscription
    created: float
    queue_url: str
    queue_gen: int = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def attached(self) -> bool:
        return self.spec.topic != DELETED_TOPIC and not self.spec.detached

    def with_spec(self, spec: Subscription) -> SubscriptionRecord:
        return SubscriptionRecord(spec, self.created, self.queue_url, self.queue_gen)


@dataclass(frozen=True)
class LogEntry:
    """One publish request as the messages table records it (see docs/storage.md)."""

    topic: str
    request_id: str
    key: str
    body_start: int
    count: int
    size: int
    publish_time: str
    expires: int
    fanned: bool = False  # publish already enqueued the messages for every subscription
    shard: int = 0  # the log partition of the topic that holds the item (store/log.py: 0 for ordered requests)
    # The raw bytes (core/payload.py) when the log item holds them, with no S3 object behind ``key``.
    inline: bytes | None = None

    @property
    def logged_inline(self) -> bool:
        return self.inline is not None
