"""Resource administration: topics and subscriptions (create, get, patch, list, delete, detach, modifyPushConfig).

Every method takes values the api layer already parsed (core/wire/requests.py, core/wire/models.py) and
returns typed values: Topic, SubscriptionRecord, a Page of either, or None for Google's Empty.
"""

from __future__ import annotations

from collections.abc import Mapping

from chalicelib.core import names
from chalicelib.core.errors import Aborted, AlreadyExists, NotFound
from chalicelib.core.names import DELETED_TOPIC, Name
from chalicelib.core.records import SubscriptionRecord, TopicRecord
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.core.wire.requests import (
    ModifyPushConfigRequest,
    PageRequest,
    UpdateSubscriptionRequest,
    UpdateTopicRequest,
)
from chalicelib.core.wire.responses import Page
from chalicelib.service import exports, push_config, quotas, transforms
from chalicelib.service.checks import check_subscription
from chalicelib.service.context import Context
from chalicelib.service.ingestion import IngestionSettings
from chalicelib.service.schema_topics import TopicSchemas


class AdminService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.resources = ctx.resources
        self.schemas = TopicSchemas(ctx)
        self.ingestion = IngestionSettings(ctx)

    # -- topics ---------------------------------------------------------------------------
    def create_topic(self, name: Name, topic: Topic) -> Topic:
        spec = topic.model_copy(update={"name": name.path, "state": None,
                                        "schema_settings": self.schemas.checked(topic.schema_settings)})
        spec = self.ingestion.checked(spec)
        transforms.check(self.ctx, spec.message_transforms)
        quotas.check_topic(self.ctx, name)
        created = self.resources.create_topic(name, spec, self.ctx.clock()).spec
        self.ingestion.applied(name.path, None, created)
        return created

    def get_topic(self, name: Name) -> Topic:
        return self.resources.require_topic(name).spec

    def patch_topic(self, name: Name, request: UpdateTopicRequest) -> Topic:
        rec = self.resources.require_topic(name)
        spec = rec.spec.model_copy(update={f: getattr(request.topic, f) for f in request.update_mask})
        if "schema_settings" in request.update_mask:
            spec = spec.model_copy(update={"schema_settings": self.schemas.checked(spec.schema_settings)})
        if "ingestion_data_source_settings" in request.update_mask:
            spec = self.ingestion.checked(spec)
        if "message_transforms" in request.update_mask:
            transforms.check(self.ctx, spec.message_transforms)
        self.resources.put_topic(name, TopicRecord(spec, rec.created))
        self.ingestion.applied(name.path, rec.spec, spec)
        return spec

    def list_topics(self, project: str, page: PageRequest) -> Page[Topic]:
        recs, nxt = self.resources.list_topics(names.check_project(project), page.size, page.token)
        return Page("topics", tuple(r.spec for r in recs), nxt)

    def delete_topic(self, name: Name) -> None:
        old = self.resources.get_topic(name)
        self.resources.delete_topic(name)
        self.ingestion.applied(name.path, old.spec if old else None, None)
        # Subscriptions survive their topic, pointing at _deleted-topic_, and stop receiving.
        while True:
            subs, _ = self.resources.topic_subscriptions(name.path, page_size=100)
            if not subs:
                return
            for rec in subs:
                spec = rec.spec.model_copy(update={"topic": DELETED_TOPIC})
                try:
                    self.resources.put_subscription(names.parse(rec.name, "subscriptions"), rec.with_spec(spec),
                                                    old_topic=name.path)
                except (NotFound, Aborted):  # gone, or a seek swapped its queue: read again
                    continue

    def topic_subscription_names(self, name: Name, page: PageRequest) -> Page[str]:
        self.resources.require_topic(name)
        recs, nxt = self.resources.topic_subscriptions(name.path, page.size, page.token)
        return Page("subscriptions", tuple(r.name for r in recs), nxt)

    # -- subscriptions --------------------------------------------------------------------
    def create_subscription(self, name: Name, subscription: Subscription) -> SubscriptionRecord:
        topic = names.parse(subscription.topic, "topics")
        spec = subscription.model_copy(update={"name": name.path, "topic": topic.path, "state": None,
                                               "topic_message_retention_duration": None, "detached": False})
        check_subscription(spec, self.ctx)
        push_config.validate(self.ctx, spec)
        spec = exports.validate(self.ctx, spec)
        transforms.check(self.ctx, spec.message_transforms)
        if self.resources.get_subscription(name) is not None:
            raise AlreadyExists("Subscription already exists")
        quotas.check_subscription(self.ctx, name, topic)
        if spec.is_push:
            quotas.check_push(self.ctx, name)
        now = self.ctx.clock()
        # Each incarnation gets its own queue: SQS refuses a queue name reused within 60 s of deletion.
        gen = self.ctx.ids.generation()
        url = self.ctx.queues.create(name.path, gen, spec.enable_message_ordering, spec.ack_deadline,
                                     spec.retention_seconds)
        rec = SubscriptionRecord(spec, now, url, gen)
        try:
            self.resources.create_subscription(name, topic, rec)
        except Exception:
            self.ctx.queues.delete(url)
            raise
        push_config.sync(self.ctx, None, rec)
        exports.sync(self.ctx, None, rec)
        return rec

    def get_subscription(self, name: Name) -> SubscriptionRecord:
        return self.resources.require_subscription(name)

    def patch_subscription(self, name: Name, request: UpdateSubscriptionRequest) -> SubscriptionRecord:
        return self._update(name, {f: getattr(request.subscription, f) for f in request.update_mask})

    def modify_push_config(self, name: Name, request: ModifyPushConfigRequest) -> None:
        """A push config with an endpoint makes (or keeps) a push subscription; an empty one, a pull subscription."""
        config = request.push_config
        self._update(name, {"push_config": config if config.push_endpoint else None})

    def detach_subscription(self, name: Name) -> None:
        """Stop delivery for good: off the topic's list, backlog dropped, pulls fail."""
        rec = self.resources.require_subscription(name)
        self._update(name, {"detached": True})
        self.ctx.queues.delete(rec.queue_url)

    def list_subscriptions(self, project: str, page: PageRequest) -> Page[SubscriptionRecord]:
        recs, nxt = self.resources.list_subscriptions(names.check_project(project), page.size, page.token)
        return Page("subscriptions", tuple(recs), nxt)

    def delete_subscription(self, name: Name) -> None:
        rec = self.resources.require_subscription(name)
        self.resources.delete_subscription(name, rec.spec.topic)
        push_config.sync(self.ctx, rec, None)
        exports.sync(self.ctx, rec, None)
        self.ctx.queues.delete(rec.queue_url)

    # -- helpers --------------------------------------------------------------------------
    def _update(self, name: Name, changes: Mapping[str, object]) -> SubscriptionRecord:
        rec = self.resources.require_subscription(name)
        spec = push_config.settle_ams_push(self.ctx, rec.spec, rec.spec.model_copy(update=dict(changes)))
        check_subscription(spec, self.ctx)
        push_config.validate(self.ctx, spec, rec.spec)
        spec = exports.validate(self.ctx, spec, rec.spec)
        if "message_transforms" in changes:
            transforms.check(self.ctx, spec.message_transforms)
        if spec.is_push and not rec.spec.is_push:
            quotas.check_push(self.ctx, name)
        if spec.ack_deadline != rec.spec.ack_deadline:
            self.ctx.queues.set_visibility_default(rec.queue_url, spec.ack_deadline)
        if spec.retention_seconds != rec.spec.retention_seconds:  # the queue keeps messages as long
            self.ctx.queues.set_retention(rec.queue_url, spec.retention_seconds)
        new = rec.with_spec(spec)
        self.resources.put_subscription(name, new, old_topic=rec.spec.topic if rec.attached else None)
        push_config.sync(self.ctx, rec, new)
        exports.sync(self.ctx, rec, new)
        return new
