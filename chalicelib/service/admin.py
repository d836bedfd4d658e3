"""Resource administration: topics and subscriptions (create, get, patch, list, delete)."""

from __future__ import annotations

from typing import Any

from chalicelib.core import limits, names
from chalicelib.core.errors import AlreadyExists, InvalidArgument, NotFound
from chalicelib.core.models import Subscription, Topic, mask_paths, parse_model
from chalicelib.core.names import DELETED_TOPIC, Name
from chalicelib.core.records import SubscriptionRecord, TopicRecord
from chalicelib.service import push_config  # push delivery (issue 4)
from chalicelib.service.checks import check_subscription
from chalicelib.service.context import Context

TOPIC_UPDATABLE = {
    "labels": "labels",
    "message_storage_policy": "message_storage_policy",
    "kms_key_name": "kms_key_name",
    "schema_settings": "schema_settings",
    "message_retention_duration": "message_retention_duration",
}
SUBSCRIPTION_UPDATABLE = {
    "push_config": "push_config",
    "ack_deadline_seconds": "ack_deadline_seconds",
    "retain_acked_messages": "retain_acked_messages",
    "message_retention_duration": "message_retention_duration",
    "labels": "labels",
    "expiration_policy": "expiration_policy",
    "dead_letter_policy": "dead_letter_policy",
    "retry_policy": "retry_policy",
    "enable_exactly_once_delivery": "enable_exactly_once_delivery",
    "detached": "detached",
}


def page_args(params: dict[str, str]) -> tuple[int, str]:
    raw = params.get("pageSize", params.get("page_size", "0")) or "0"
    try:
        size = int(raw)
    except ValueError:
        raise InvalidArgument(f"Invalid page_size: {raw!r}") from None
    if size < 0:
        raise InvalidArgument("page_size must not be negative")
    size = min(size or limits.DEFAULT_PAGE_SIZE, limits.MAX_PAGE_SIZE)
    return size, params.get("pageToken", params.get("page_token", ""))


def _or_empty(value: Any) -> Any:
    """An absent (or null) message field is the empty message; any other non-object is refused by parse_model."""
    return {} if value is None else value


def _listing(key: str, items: list[Any], token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if items:
        out[key] = items
    if token:
        out["nextPageToken"] = token
    return out


class AdminService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.resources = ctx.resources

    # -- topics ---------------------------------------------------------------------------
    def create_topic(self, name: Name, body: Any) -> dict[str, Any]:
        topic = parse_model(Topic, body, "topic")
        self._same_name(topic.name, name)
        spec = topic.model_copy(update={"name": name.path, "state": None})
        return self.resources.create_topic(name, spec, self.ctx.clock()).spec.to_wire()

    def get_topic(self, name: Name) -> dict[str, Any]:
        return self.resources.require_topic(name).spec.to_wire()

    def patch_topic(self, name: Name, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
        patch = parse_model(Topic, _or_empty(body.get("topic")), "topic")
        fields = mask_paths(body.get("updateMask", body.get("update_mask")), TOPIC_UPDATABLE, "UpdateTopicRequest")
        self._same_name(patch.name, name)
        rec = self.resources.require_topic(name)
        spec = rec.spec.model_copy(update={f: getattr(patch, f) for f in fields})
        self.resources.put_topic(name, TopicRecord(spec, rec.created))
        return spec.to_wire()

    def list_topics(self, project: str, params: dict[str, str]) -> dict[str, Any]:
        size, token = page_args(params)
        recs, nxt = self.resources.list_topics(names.check_project(project), size, token)
        return _listing("topics", [r.spec.to_wire() for r in recs], nxt)

    def delete_topic(self, name: Name) -> dict[str, Any]:
        self.resources.delete_topic(name)
        # Subscriptions survive their topic, pointing at _deleted-topic_, and stop receiving.
        while True:
            subs, _ = self.resources.topic_subscriptions(name.path, page_size=100)
            for rec in subs:
                spec = rec.spec.model_copy(update={"topic": DELETED_TOPIC})
                try:
                    self.resources.put_subscription(names.parse(rec.name, "subscriptions"), rec.with_spec(spec),
                                                    old_topic=name.path)
                except NotFound:
                    continue
            if not subs:
                return {}

    def topic_subscription_names(self, name: Name, params: dict[str, str]) -> dict[str, Any]:
        self.resources.require_topic(name)
        size, token = page_args(params)
        recs, nxt = self.resources.topic_subscriptions(name.path, size, token)
        return _listing("subscriptions", [r.name for r in recs], nxt)

    # -- subscriptions --------------------------------------------------------------------
    def create_subscription(self, name: Name, body: Any) -> dict[str, Any]:
        sub = parse_model(Subscription, body, "subscription")
        self._same_name(sub.name, name)
        topic = names.parse(sub.topic, "topics")
        spec = sub.model_copy(update={"name": name.path, "topic": topic.path, "state": None,
                                      "topic_message_retention_duration": None, "detached": False})
        check_subscription(spec, self.ctx)
        push_config.validate(self.ctx, spec)  # push delivery (issue 4)
        if self.resources.get_subscription(name) is not None:
            raise AlreadyExists("Subscription already exists")
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
        push_config.sync(self.ctx, None, rec)  # push delivery (issue 4)
        return self._sub_wire(rec)

    def get_subscription(self, name: Name) -> dict[str, Any]:
        return self._sub_wire(self.resources.require_subscription(name))

    def patch_subscription(self, name: Name, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
        patch = parse_model(Subscription, _or_empty(body.get("subscription")), "subscription")
        fields = mask_paths(body.get("updateMask", body.get("update_mask")), SUBSCRIPTION_UPDATABLE,
                            "UpdateSubscriptionRequest")
        self._same_name(patch.name, name)
        return self.update_subscription(name, {f: getattr(patch, f) for f in fields})

    def update_subscription(self, name: Name, changes: dict[str, Any]) -> dict[str, Any]:
        rec = self.resources.require_subscription(name)
        spec = rec.spec.model_copy(update=changes)
        check_subscription(spec, self.ctx)
        push_config.validate(self.ctx, spec, rec.spec)  # push delivery (issue 4)
        if spec.ack_deadline != rec.spec.ack_deadline:
            self.ctx.queues.set_visibility_default(rec.queue_url, spec.ack_deadline)
        new = rec.with_spec(spec)
        self.resources.put_subscription(name, new, old_topic=rec.spec.topic if rec.attached else None)
        push_config.sync(self.ctx, rec, new)  # push delivery (issue 4)
        return self._sub_wire(new)

    def detach_subscription(self, name: Name) -> dict[str, Any]:
        """Stop delivery for good: off the topic's list, backlog dropped, pulls fail."""
        rec = self.resources.require_subscription(name)
        self.update_subscription(name, {"detached": True})
        self.ctx.queues.delete(rec.queue_url)
        return {}

    def list_subscriptions(self, project: str, params: dict[str, str]) -> dict[str, Any]:
        size, token = page_args(params)
        recs, nxt = self.resources.list_subscriptions(names.check_project(project), size, token)
        return _listing("subscriptions", [self._sub_wire(r) for r in recs], nxt)

    def delete_subscription(self, name: Name) -> dict[str, Any]:
        rec = self.resources.require_subscription(name)
        self.resources.delete_subscription(name, rec.spec.topic)
        push_config.sync(self.ctx, rec, None)  # push delivery (issue 4)
        self.ctx.queues.delete(rec.queue_url)
        return {}

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _same_name(given: str, name: Name) -> None:
        if given and given != name.path:
            raise InvalidArgument(f"The name in the body ({given}) does not match the URL ({name.path}).")

    @staticmethod
    def _sub_wire(rec: SubscriptionRecord) -> dict[str, Any]:
        wire = rec.spec.to_wire()
        # Google fills these in on output.
        wire.setdefault("pushConfig", {})
        wire["ackDeadlineSeconds"] = rec.spec.ack_deadline
        wire.setdefault("messageRetentionDuration", f"{limits.RETENTION_DEFAULT}s")
        if rec.spec.expiration_policy is None:
            wire["expirationPolicy"] = {"ttl": f"{limits.EXPIRATION_DEFAULT}s"}
        wire["state"] = "ACTIVE"
        return wire

