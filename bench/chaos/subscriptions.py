"""The fault run's subscriptions: what each is made with, which edge reads it and which rules judge it.

``BASIC`` is the soak's four (pull, ordered, exactly-once, push, all over REST); ``FULL`` adds the edges and the
features a history checker can judge (bench/chaos/checker.py):

- ``streamed``: exactly-once over gRPC StreamingPull (google-cloud-pubsub's subscriber);
- ``filtered``: a filter on ``lane``, read over the AMS dialect;
- ``replay``: another lane, acknowledged messages retained, seeked to a time and to snapshots while it runs;
- ``doomed``: a dead-letter policy of 5 attempts (Google's least) on the ``doom`` messages, every delivery nacked;
- ``graveyard``: the dead-letter topic's subscription, where each of those must arrive once forwarded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.chaos import history as h
from bench.chaos.ledger import EXACTLY_ONCE, ORDERED, PULL, PUSH

TOPIC, DEAD_LETTER_TOPIC = "events", "graves"
DEAD_LETTER_SOURCE = "dead-letter-source"  # a ledger kind the ledger does not book: its keys settle elsewhere
MAX_DELIVERY_ATTEMPTS = 5
LANES = "abcd"


@dataclass(frozen=True)
class Sub:
    name: str
    kind: str  # the ledger's kind (bench/chaos/ledger.py), or DEAD_LETTER_SOURCE
    edge: str
    ack_deadline: int = 20
    body: dict[str, Any] = field(default_factory=dict)  # the create request's other fields
    filter: dict[str, str] = field(default_factory=dict)
    topic: str = TOPIC
    seeks: bool = False
    dead_letter_of: str = ""

    def spec(self) -> h.Subscription:
        return h.Subscription(
            name=self.name, edge=self.edge, ordered=self.kind == ORDERED, exactly_once=self.kind == EXACTLY_ONCE,
            ack_deadline=self.ack_deadline, filter=dict(self.filter), seeks=self.seeks,
            max_delivery_attempts=MAX_DELIVERY_ATTEMPTS if self.kind == DEAD_LETTER_SOURCE else 0,
            dead_letter_of=self.dead_letter_of)

    def request(self, project: str, push_url: str) -> dict[str, Any]:
        body: dict[str, Any] = {"topic": f"projects/{project}/topics/{self.topic}",
                                "ackDeadlineSeconds": self.ack_deadline, **self.body}
        if self.kind == PUSH:
            body["pushConfig"] = {"pushEndpoint": push_url}
        if self.filter:
            body["filter"] = " AND ".join(f'attributes.{k} = "{v}"' for k, v in sorted(self.filter.items()))
        if self.kind == DEAD_LETTER_SOURCE:
            body["deadLetterPolicy"] = {"deadLetterTopic": f"projects/{project}/topics/{DEAD_LETTER_TOPIC}",
                                        "maxDeliveryAttempts": MAX_DELIVERY_ATTEMPTS}
        return body


# Exactly-once acks fail once the deadline has passed, and these pullers do not extend deadlines as Google's
# clients do: on a busy machine a pull (one lease write per message) can take most of 20 s.
EXACTLY_ONCE_DEADLINE = 60

BASIC = (
    Sub("plain", PULL, h.REST),
    Sub("ordered", ORDERED, h.REST, body={"enableMessageOrdering": True}),
    Sub("exact", EXACTLY_ONCE, h.REST, EXACTLY_ONCE_DEADLINE, body={"enableExactlyOnceDelivery": True}),
    Sub("pushed", PUSH, h.PUSH),
)
FULL = (
    *BASIC,
    Sub("streamed", EXACTLY_ONCE, h.STREAM, EXACTLY_ONCE_DEADLINE, body={"enableExactlyOnceDelivery": True}),
    Sub("filtered", PULL, h.AMS, filter={"lane": "a"}),
    Sub("replay", PULL, h.REST, body={"retainAckedMessages": True}, filter={"lane": "b"}, seeks=True),
    Sub("doomed", DEAD_LETTER_SOURCE, h.REST, filter={"doom": "1"}),
    Sub("graveyard", PULL, h.REST, topic=DEAD_LETTER_TOPIC, dead_letter_of="doomed"),
)
SETS = {"basic": BASIC, "full": FULL}


def wants(sub: Sub, source: Sub | None, attributes: dict[str, str]) -> bool:
    """Whether a message with ``attributes`` should reach ``sub`` (a dead-letter subscription: its source's)."""
    rules = source.filter if source is not None else sub.filter
    return all(attributes.get(k) == v for k, v in rules.items())


def message_attributes(seq: int) -> dict[str, str]:
    """The attributes the filters read: a lane out of four, and one message in twenty doomed."""
    attrs = {"lane": LANES[seq % len(LANES)]}
    if seq % 20 == 7:
        attrs["doom"] = "1"
    return attrs
