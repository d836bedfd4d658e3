"""Sorting a push batch: which messages wait in a lane to be pushed, and which never reach the endpoint.

A lane is an ordering key's message group on an ordered subscription (one push at a time, in order),
or a single message otherwise. Messages outside the lanes: undecodable ones (acknowledged: they can
never be delivered), ones whose body is stored nowhere (left for their visibility timeout: not the
endpoint's fault) and ones past maxDeliveryAttempts (forwarded to the dead-letter topic).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from chalicelib.core.queueing.deadletter import past_max_attempts
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.delivery import Delivery


@dataclass
class Sorted:
    lanes: dict[str, deque[Delivery]] = field(default_factory=dict)
    undecodable: list[Delivery] = field(default_factory=list)
    missing: list[Delivery] = field(default_factory=list)  # the body is gone from S3 and the archive
    dead: list[Delivery] = field(default_factory=list)  # past maxDeliveryAttempts


def sort(rec: SubscriptionRecord, deliveries: Sequence[Delivery]) -> Sorted:
    out = Sorted()
    for d in deliveries:
        if d.env is None:
            out.undecodable.append(d)
        elif d.data is None:
            out.missing.append(d)
        elif past_max_attempts(rec, d.attempt):
            out.dead.append(d)
        else:
            out.lanes.setdefault(d.group, deque()).append(d)
    return out
