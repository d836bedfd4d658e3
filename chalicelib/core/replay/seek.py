"""Seek and snapshot rules (pure): which messages a seek makes unacknowledged again, and when a snapshot expires.

Google's semantics (docs/policies.md, "Retention and replay"):

- ``seek {time}``: every retained message published at or after the time (and matching the subscription's
  filter) is unacknowledged afterwards; everything published before it counts as acknowledged.
- Acknowledged messages are retained, and so can come back, when the subscription has
  ``retainAckedMessages`` or its topic has a ``messageRetentionDuration``; the topic's retention also lets
  a subscription seek to before it existed. Otherwise only the unacknowledged backlog is kept: seeking
  forward drops its older part, seeking back restores nothing that was acknowledged.
- A snapshot holds the subscription's unacknowledged backlog when it was taken plus every message published
  after it. It lives 7 days less the age of the oldest message of that backlog; one that would expire within
  the hour is refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from chalicelib.core import ids
from chalicelib.core.errors import FailedPrecondition
from chalicelib.core.timefmt import parse_duration
from chalicelib.core.wire.models import Subscription, Topic

SNAPSHOT_LIFETIME = 7 * 24 * 3600
SNAPSHOT_MIN_LIFETIME = 3600


def topic_retention(topic: Topic | None) -> float:
    """The topic's own retention in seconds (0: the topic retains nothing beyond its subscriptions' backlogs)."""
    if topic is None or not topic.message_retention_duration:
        return 0.0
    return parse_duration(topic.message_retention_duration, "message_retention_duration")


def replays_acked(spec: Subscription, topic: Topic | None) -> bool:
    """Whether a seek may bring back acknowledged messages (else it works on the unacknowledged backlog)."""
    return spec.retain_acked_messages or topic_retention(topic) > 0


def earliest_retained(spec: Subscription, topic: Topic | None, created: float, now: float) -> float:
    """The oldest publish time (epoch seconds) a seek of this subscription can bring back.

    The topic's retention reaches back before the subscription existed; the subscription's own retention
    (with retainAckedMessages) reaches back no further than its creation.
    """
    by_topic = now - topic_retention(topic) if topic_retention(topic) else now
    by_subscription = max(now - spec.retention_seconds, created) if spec.retain_acked_messages else now
    return min(by_topic, by_subscription)


@dataclass(frozen=True)
class Restore:
    """What a seek makes unacknowledged: every message published from ``from_ms`` (epoch ms) on, plus the
    messages named in ``backlog`` (a snapshot's unacknowledged ones, published before ``from_ms``), plus, for
    an ordered subscription, every message of an ordering key in ``keys`` published from that key's bound
    (its oldest unacknowledged message: an ordered queue hands out a key's later messages only after it)."""

    from_ms: int
    backlog: frozenset[str] = frozenset()
    keys: Mapping[str, int] = field(default_factory=dict)

    @property
    def scan_from_ms(self) -> int:
        """Where reading the topic's log has to start."""
        return min([self.from_ms, *(ids.publish_ms(m) for m in self.backlog), *self.keys.values()])

    def wants(self, message_id: str, ordering_key: str = "") -> bool:
        published = ids.publish_ms(message_id)
        if published >= self.from_ms or message_id in self.backlog:
            return True
        bound = self.keys.get(ordering_key) if ordering_key else None
        return bound is not None and published >= bound


def key_bounds(held: Collection[tuple[str, str]]) -> dict[str, int]:
    """Per ordering key, the publish time (ms) of its oldest message among ``held`` (message id, key) pairs."""
    bounds: dict[str, int] = {}
    for message_id, key in held:
        if key:
            bounds[key] = min(bounds.get(key, ids.publish_ms(message_id)), ids.publish_ms(message_id))
    return bounds


def snapshot_expiry(now: float, backlog: Collection[str]) -> float:
    """When a snapshot taken now of ``backlog`` (message ids) expires; FAILED_PRECONDITION if within the hour."""
    oldest = min((ids.publish_ms(m) / 1000 for m in backlog), default=now)
    expires = min(oldest, now) + SNAPSHOT_LIFETIME
    if expires - now < SNAPSHOT_MIN_LIFETIME:
        raise FailedPrecondition("The operation could not be completed because the snapshot would expire in less "
                                 "than 1 hour after creation: the subscription's backlog is too old.")
    return expires
