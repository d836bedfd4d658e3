"""The scheduled maintenance handler: deletes subscriptions idle longer than their expirationPolicy.

Activity is a pull, acknowledge or modifyAckDeadline call, or a successful push (recorded at most
once an hour). The default policy is 31 days; an expirationPolicy without ttl never expires.

Runs hourly in AWS (a Chalice schedule) and every METRO_MAINTENANCE_INTERVAL seconds in the local pump.
"""

from __future__ import annotations

import logging

from chalicelib.core import limits, names
from chalicelib.core.errors import NotFound
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import parse_duration
from chalicelib.service.admin import AdminService
from chalicelib.service.context import Context

log = logging.getLogger("metro.maintenance")


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
