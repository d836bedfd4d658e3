"""The scheduled maintenance work: the dead-letter sweep, the fan-out catch-up, and deleting subscriptions idle
longer than their expirationPolicy.

Activity is a pull, acknowledge or modifyAckDeadline call, or a successful push (recorded at most
once an hour). The default policy is 31 days; an expirationPolicy without ttl never expires.

The sweep forwards last delivery attempts whose ack deadline passed (service/deadletter.py). The catch-up fans
out publish requests that the stream handler has not, long after their publish (delivery/fanout.py).

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
from chalicelib.delivery.fanout import FanOut
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


CATCH_UP_BUDGET_SECONDS = 15.0  # of a run (the maintenance function's timeout is 30 s; it runs every minute)


def catch_up_after(event: Mapping[str, Any] | None, ctx: Context) -> float:
    """How old an unfanned publish request must be for the catch-up: METRO_FANOUT_CATCHUP_SECONDS, or the
    ``detail.catchUpAfterSeconds`` of a maintenance run invoked by hand with a scheduled event's shape
    (docs/operations.md: once fan-out is back, catch up now rather than in a quarter of an hour)."""
    detail = (event or {}).get("detail")
    given = detail.get("catchUpAfterSeconds") if isinstance(detail, Mapping) else None
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0:
        return float(given)
    return ctx.config.fanout_catchup_seconds


def catch_up_fanout(ctx: Context, event: Mapping[str, Any] | None = None) -> int:
    """Publish requests still unfanned long after their publish (:func:`catch_up_after`), fanned out again."""
    return FanOut(ctx).catch_up(ctx.clock() - catch_up_after(event, ctx), ctx.config.fanout_catchup_batch,
                                CATCH_UP_BUDGET_SECONDS)


def sweep_dead_letters(ctx: Context) -> int:
    """Forward the last attempts whose deadline passed; how many left their subscriptions."""
    return LastAttempts(ctx, Steps(ctx), DeadLetters(ctx, PublishService(ctx).append)).sweep()
