"""The scheduled maintenance work: the dead-letter sweep, and deleting subscriptions idle longer than their
expirationPolicy.

Activity is a pull, acknowledge or modifyAckDeadline call, or a successful push (recorded at most
once an hour). The default policy is 31 days; an expirationPolicy without ttl never expires.

The sweep forwards last delivery attempts whose ack deadline passed (service/deadletter.py).

In AWS the maintenance function runs every minute (a Chalice schedule): the sweep each time, the
expiry in the first minute of each hour. Locally the sweep runs every METRO_DEAD_LETTER_SWEEP_SECONDS
and the expiry every METRO_MAINTENANCE_INTERVAL seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from chalicelib.core import limits, names
from chalicelib.core.errors import NotFound
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_duration
from chalicelib.service.admin import AdminService
from chalicelib.service.context import Context
from chalicelib.service.deadletter import DeadLetters, LastAttempts
from chalicelib.service.delivery import Steps
from chalicelib.service.publish import PublishService

log = logging.getLogger("metro.maintenance")


def hourly_work_due(event: Mapping[str, Any] | None) -> bool:
    """Whether a maintenance run does its hourly work: in the first minute of an hour by the scheduled
    event's ``time`` (EventBridge runs the function every minute); always when the event has no time."""
    when = str((event or {}).get("time") or "")
    if len(when) < 16 or when[13] != ":":
        return True
    return when[14:16] == "00"


def expiry_ttl(rec: SubscriptionRecord) -> float | None:
    """Seconds of inactivity after which the subscription is deleted; None = never."""
    policy = rec.spec.expiration_policy
    if policy is None:
        return float(limits.EXPIRATION_DEFAULT)
    return parse_duration(policy.ttl, "expiration_policy.ttl") if policy.ttl else None


def expire_idle_subscriptions(ctx: Context) -> list[str]:
    now = ctx.clock()
    expired = []
    for rec, active in ctx.resources.all_subscriptions():
        ttl = expiry_ttl(rec)
        if ttl is None or now - max(active, rec.created) <= ttl:
            continue
        try:  # the same path as a DeleteSubscription call: index, push mapping, queue
            AdminService(ctx).delete_subscription(names.parse(rec.name, "subscriptions"))
        except NotFound:
            continue
        log.info("deleted subscription %s: idle for more than %ss", rec.name, int(ttl))
        expired.append(rec.name)
    return expired


def sweep_dead_letters(ctx: Context) -> int:
    """Forward the last attempts whose deadline passed; how many left their subscriptions."""
    return LastAttempts(ctx, Steps(ctx), DeadLetters(ctx, PublishService(ctx).append)).sweep()
