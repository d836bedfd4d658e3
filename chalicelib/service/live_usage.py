"""The live part of the ``:metrics`` answers (core/live.py): the flushed counters and rates of a topic or a
subscription, its queue's counts read now, and a project's totals and members."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.core import live, names, usage
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.service.context import Context

Metric = dict[str, Any]


def _now(ctx: Context) -> str:
    return usage.now_timestamp(ctx.clock())


def topic_metrics(ctx: Context, name: Name) -> list[Metric]:
    stored, ts = ctx.counters.read(name), _now(ctx)
    return [live.metric("topic.number_of_published_messages", "topic", name.id, stored.get(live.PUBLISHED, 0), ts),
            live.metric("topic.number_of_published_bytes", "topic", name.id, stored.get(live.BYTES, 0), ts),
            live.metric("topic.publishing_rate", "topic", name.id, live.rate(stored), ts)]


def message_counts(ctx: Context, rec: SubscriptionRecord, stored: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """(waiting, in flight) messages of a subscription: SQS's counts of queue messages, times the messages its
    packs carried on average (an estimate once packs are involved; core/queueing/packs.py)."""
    if not rec.queue_url:
        return 0, 0
    if stored is None:
        stored = ctx.counters.read(names.parse(rec.name, "subscriptions"), unflushed=True)
    scale = live.per_queue_message(stored)
    waiting, inflight = ctx.queues.counts(rec.queue_url)
    return round(waiting * scale), round(inflight * scale)


def subscription_metrics(ctx: Context, name: Name, rec: SubscriptionRecord) -> list[Metric]:
    """Four reads: the counters item (twice: flushed, and with this process's tally for the pack estimate), the
    queue's attributes and its CloudWatch age."""
    stored, ts = ctx.counters.read(name), _now(ctx)
    waiting, inflight = message_counts(ctx, rec)
    sub, age_name = "subscription", "subscription.oldest_unacked_message_age"
    age = ctx.queue_age.oldest_seconds(rec.queue_url, ctx.clock()) if rec.queue_url else None
    oldest = live.unknown(age_name, sub, name.id) if age is None else live.metric(age_name, sub, name.id, age, ts)
    return [live.metric("subscription.number_of_delivered_messages", sub, name.id, stored.get(live.DELIVERED, 0), ts),
            live.metric("subscription.number_of_acknowledged_messages", sub, name.id, stored.get(live.ACKED, 0), ts),
            live.metric("subscription.consumption_rate", sub, name.id, live.rate(stored), ts),
            live.metric("subscription.number_of_waiting_messages", sub, name.id, waiting, ts),
            live.metric("subscription.number_of_inflight_messages", sub, name.id, inflight, ts), oldest]


def project_metrics(ctx: Context, project: str) -> list[Metric]:
    ts = _now(ctx)
    members = sum(1 for user in ctx.identity.list_users() if any(p.project == project for p in user.projects))
    return [live.metric("project.number_of_users", "project", project, members, ts),
            live.metric("project.number_of_published_messages", "project", project,
                        ctx.counters.project_total(project, live.PUBLISHED), ts)]
