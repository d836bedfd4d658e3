"""Quota checks run before a resource is created or turned into a push subscription.

Each check is one COUNT query (or one Query of the push index): paid on creates and push
configuration changes only, never on the message path. Two racing creates may both pass with one
slot left, so a quota can be exceeded by the number of concurrent creates; it bounds cost, it is
not an exact ledger.
"""

from __future__ import annotations

from chalicelib.core.access import quotas
from chalicelib.core.names import Name
from chalicelib.service.context import Context


def check_topic(ctx: Context, name: Name) -> None:
    quotas.check("topics-per-project", ctx.resources.count_topics(name.project), ctx.config.quotas.topics)


def check_subscription(ctx: Context, name: Name, topic: Name) -> None:
    limits = ctx.config.quotas
    quotas.check("subscriptions-per-project", ctx.resources.count_subscriptions(name.project), limits.subscriptions)
    quotas.check("subscriptions-per-topic", ctx.resources.count_topic_subscriptions(topic.path),
                 limits.subscriptions_per_topic)


def check_push(ctx: Context, name: Name) -> None:
    """Before a subscription starts pushing (create or a pull subscription switched to push)."""
    limit = ctx.config.quotas.push_subscriptions
    if not limit:
        return
    prefix = f"projects/{name.project}/"
    used = sum(1 for sub in ctx.push.index_list() if sub.startswith(prefix) and sub != name.path)
    quotas.check("push-subscriptions-per-project", used, limit)
