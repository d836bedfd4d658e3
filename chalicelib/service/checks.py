"""Checks a subscription's settings against each other and against the topics they name."""

from __future__ import annotations

from chalicelib.core import limits, names
from chalicelib.core.errors import InvalidArgument, NotFound
from chalicelib.core.queueing.filters import parse_filter
from chalicelib.core.wire.models import Subscription
from chalicelib.service.context import Context


def check_subscription(spec: Subscription, ctx: Context) -> None:
    if spec.message_retention_duration is not None and spec.retention_seconds > limits.SUBSCRIPTION_RETENTION_MAX:
        # Checked here, not in the model: a stored subscription is read back whatever it was created with.
        raise InvalidArgument("message_retention_duration out of bounds: a subscription keeps messages for "
                              "10 minutes to 7 days.")
    if spec.filter:
        parse_filter(spec.filter)
    if spec.dead_letter_policy and spec.dead_letter_policy.dead_letter_topic:
        dlt = names.parse(spec.dead_letter_policy.dead_letter_topic, "topics")
        if dlt.path == spec.topic:
            raise InvalidArgument("The dead-letter topic must differ from the subscription's topic.")
        try:
            ctx.resources.require_topic(dlt)
        except NotFound:
            raise InvalidArgument(f"Dead letter topic {dlt.path} does not exist.") from None
    retry = spec.retry_policy
    if retry and retry.minimum_backoff and retry.maximum_backoff:
        lo, hi = (float(v.rstrip("s")) for v in (retry.minimum_backoff, retry.maximum_backoff))
        if lo > hi:
            raise InvalidArgument("retry_policy.minimum_backoff must not exceed maximum_backoff.")
