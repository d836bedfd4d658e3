"""Usage metrics of projects, topics and subscriptions (AMS's ``:metrics`` calls).

Stored figures (messages and bytes per topic and day) come from the summary the metrics job writes
(``spark_emr/metrics.py``); counts of subscriptions and a subscription's backlog are read now. A
missing summary yields zeros; an unknown topic or subscription is NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chalicelib.core import names, usage
from chalicelib.core.names import Name
from chalicelib.core.wire.responses import MetricsResponse
from chalicelib.service import live_usage
from chalicelib.service.context import Context


def _response(document: Mapping[str, Any], live: Sequence[Mapping[str, Any]] = ()) -> MetricsResponse:
    return MetricsResponse((*document["metrics"], *live))


class UsageService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.store = ctx.usage

    def _now(self) -> str:
        return usage.now_timestamp(self.ctx.clock())

    def topic_metrics(self, name: Name) -> MetricsResponse:
        self.ctx.resources.require_topic(name)
        subs, _ = self.ctx.resources.topic_subscriptions(name.path)
        return _response(usage.topic_metrics(self.store.summary(name.project), name.id, len(subs), self._now()),
                         live_usage.topic_metrics(self.ctx, name))

    def subscription_metrics(self, name: Name) -> MetricsResponse:
        rec = self.ctx.resources.require_subscription(name)
        backlog = sum(live_usage.message_counts(self.ctx, rec))
        return _response(usage.subscription_metrics(self.store.summary(name.project), name.id, backlog, self._now()),
                         live_usage.subscription_metrics(self.ctx, name, rec))

    def project_metrics(self, project: str) -> MetricsResponse:
        names.check_project(project)
        topics, _ = self.ctx.resources.list_topics(project, 0, "")
        subs, _ = self.ctx.resources.list_subscriptions(project, 0, "")
        summary = self.store.summary(project)
        return _response(usage.project_metrics(summary, project, len(topics), len(subs), self._now()),
                         live_usage.project_metrics(self.ctx, project))
