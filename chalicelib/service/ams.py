"""The ARGO Messaging Service's use cases that Google's API has no counterpart for: subscriptions made
with AMS's push settings (and kept acknowledged messages, so offsets can move back), AMS's push
configuration, its subscription-wide ack deadline, and push endpoint verification.

Everything else an AMS client does goes through the same services as Google's clients.
"""

from __future__ import annotations

from chalicelib.core import limits, usage
from chalicelib.core.errors import FailedPrecondition, InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire import ams
from chalicelib.core.wire.ams import AUTOGEN, AmsPushRequest
from chalicelib.core.wire.models import AmsPush, Subscription
from chalicelib.core.wire.requests import UpdateSubscriptionRequest
from chalicelib.core.wire.responses import MetricsResponse
from chalicelib.service.admin import AdminService
from chalicelib.service.context import Context
from chalicelib.store.resolver import strict_rules
from chalicelib.store.verification import fetch_verification_hash

_PUSH_FIELDS = ("push_config", "retry_policy", "ams_push")


def push_ready(ctx: Context, rec: SubscriptionRecord) -> bool:
    """Whether delivery may push: an AMS subscription under the deployed push rules needs a verified endpoint."""
    push = rec.spec.ams_push
    return push is None or push.verified or not strict_rules(ctx.config)


class AmsService:
    def __init__(self, ctx: Context, admin: AdminService) -> None:
        self.ctx = ctx
        self.admin = admin

    def create_subscription(self, name: Name, subscription: Subscription, push: AmsPushRequest) -> SubscriptionRecord:
        """AMS keeps acknowledged messages for replay: so does a subscription made through its dialect."""
        spec = subscription.model_copy(update={"retain_acked_messages": True, **self._push_fields(push, None)})
        return self.admin.create_subscription(name, spec)

    def modify_push_config(self, name: Name, push: AmsPushRequest) -> SubscriptionRecord:
        rec = self.admin.get_subscription(name)
        changes = Subscription().model_copy(update=self._push_fields(push, rec.spec))
        return self.admin.patch_subscription(name, UpdateSubscriptionRequest(changes, _PUSH_FIELDS))

    def set_ack_deadline(self, name: Name, seconds: int) -> SubscriptionRecord:
        """AMS's ``:modifyAckDeadline`` without ack ids: the subscription's deadline (0 to 600 s)."""
        if not 0 <= seconds <= limits.ACK_DEADLINE_MAX:
            raise InvalidArgument(f"ackDeadlineSeconds must be between 0 and {limits.ACK_DEADLINE_MAX}.")
        seconds = max(seconds, limits.ACK_DEADLINE_MIN)  # SQS needs some lease; Google's floor is 10 s
        request = UpdateSubscriptionRequest(Subscription(ack_deadline_seconds=seconds), ("ack_deadline_seconds",))
        return self.admin.patch_subscription(name, request)

    def verify_push_endpoint(self, name: Name) -> SubscriptionRecord:
        """GET the endpoint's ``/ams_verification_hash``; its body must be the subscription's hash."""
        rec = self.admin.get_subscription(name)
        push, pc = rec.spec.ams_push, rec.spec.push_config
        if push is None or pc is None or not pc.push_endpoint:
            raise FailedPrecondition("The subscription has no AMS push configuration to verify.")
        if push.verified:
            raise FailedPrecondition("Push endpoint is already verified")
        status, body = fetch_verification_hash(self.ctx.resolver, pc.push_endpoint)
        if status != 200 or body != push.verification_hash:
            raise FailedPrecondition(f"Endpoint verification failed: {pc.push_endpoint} answered {status or body} "
                                     "without the subscription's verification hash")
        verified = push.model_copy(update={"verified": True})
        return self.admin.patch_subscription(name, UpdateSubscriptionRequest(Subscription(ams_push=verified),
                                                                             ("ams_push",)))

    def service_metrics(self) -> MetricsResponse:
        """``GET /v1/metrics``: projects, users, topics and subscriptions of the whole service, counted now."""
        projects = self.ctx.identity.list_projects()
        topics = subs = 0
        for project in projects:
            topics += len(self.ctx.resources.list_topics(project.name, 0, "")[0])
            subs += len(self.ctx.resources.list_subscriptions(project.name, 0, "")[0])
        now = usage.now_timestamp(self.ctx.clock())
        counts = {"ams.number_of_projects": len(projects), "ams.number_of_users": len(self.ctx.identity.list_users()),
                  "ams.number_of_topics": topics, "ams.number_of_subscriptions": subs}
        return MetricsResponse(tuple(ams.service_metric(name, value, now) for name, value in counts.items()))

    def _push_fields(self, push: AmsPushRequest, previous: Subscription | None) -> dict[str, object]:
        """Google's push config and retry policy for ``push``, and AMS's settings beside them."""
        config = ams.google_push_config(push)
        if config is None:
            return {"push_config": None, "retry_policy": None, "ams_push": None}
        old = previous.ams_push if previous is not None else None
        old_endpoint = previous.push_config.push_endpoint if previous and previous.push_config else ""
        same_endpoint = old is not None and old_endpoint == push.endpoint
        settings = AmsPush(
            max_messages=push.max_messages, retry_type=push.retry_type, retry_period_ms=push.retry_period_ms,
            authorization_type=push.authorization_type,
            # AMS makes a new authorization value on every update with autogen
            authorization_value=self.ctx.ids.secret() if push.authorization_type == AUTOGEN else "",
            verification_hash=old.verification_hash if same_endpoint and old else self.ctx.ids.secret(),
            verified=bool(same_endpoint and old and old.verified))
        return {"push_config": config, "retry_policy": ams.retry_policy(push), "ams_push": settings}
