"""The ARGO Messaging Service (AMS) dialect's resource shapes (pure; no I/O).

AMS names resources with a leading slash (``/projects/p/topics/t``), sends numbers and booleans as
strings, and configures push with its own fields: ``type``, ``maxMessages``, ``retryPolicy {type, period}``
(milliseconds), ``authorizationHeader {type: autogen | disabled}``, plus the endpoint verification hash.
Metro keeps those settings beside Google's push config (``Subscription.ams_push``) and maps the retry
policy onto Google's (``linear``: the period, ``slowstart``: exponential from 1 s, within Google's bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalicelib.core import limits
from chalicelib.core.errors import Aborted, InvalidArgument
from chalicelib.core.timefmt import format_duration
from chalicelib.core.wire.fields import int_field
from chalicelib.core.wire.models import AmsPush, PushConfig, RetryPolicy

HTTP_ENDPOINT = "http_endpoint"
LINEAR, SLOWSTART = "linear", "slowstart"
AUTOGEN, DISABLED = "autogen", "disabled"
DEFAULT_PERIOD_MS = 3000  # as AmsPush's default
SLOWSTART_FIRST_SECONDS = 1.0
VERIFICATION_PATH = "/ams_verification_hash"


@dataclass(frozen=True)
class AmsPushRequest:
    """A push config as an AMS client sends it; an empty endpoint turns push off."""

    endpoint: str = ""
    max_messages: int = 1
    retry_type: str = LINEAR
    retry_period_ms: int = DEFAULT_PERIOD_MS
    authorization_type: str = AUTOGEN


# -- names ----------------------------------------------------------------------------------------------
def ams_name(path: str) -> str:
    """``projects/p/topics/t`` -> ``/projects/p/topics/t`` (AMS's form; other strings are kept)."""
    return "/" + path if path.startswith("projects/") else path


def google_name(path: object) -> object:
    """A resource name as AMS clients send it (with or without the leading slash) in Google's form."""
    return path.lstrip("/") if isinstance(path, str) else path


# -- requests -------------------------------------------------------------------------------------------
def _object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument(f"Invalid {what}: must be a JSON object")
    return value


def _choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise InvalidArgument(f"Invalid {what}: {str(value)[:40]!r} (one of {', '.join(allowed)})")
    return str(value)


def push_request(raw: Any) -> AmsPushRequest:
    """AMS's ``pushConfig`` object (numbers may be strings)."""
    body = _object(raw, "pushConfig")
    endpoint = body.get("pushEndpoint", "") or ""
    if not isinstance(endpoint, str):
        raise InvalidArgument("Invalid pushConfig.pushEndpoint: must be a string")
    if not endpoint:
        return AmsPushRequest()
    _choice(body.get("type", HTTP_ENDPOINT) or HTTP_ENDPOINT, (HTTP_ENDPOINT,), "pushConfig.type")
    retry = _object(body.get("retryPolicy"), "pushConfig.retryPolicy")
    auth = _object(body.get("authorizationHeader", body.get("authorization_header")), "pushConfig.authorizationHeader")
    max_messages = int_field(body, "maxMessages", "max_messages", 1) or 1
    period = int_field(retry, "period", "period", DEFAULT_PERIOD_MS) or DEFAULT_PERIOD_MS
    if not 1 <= max_messages <= limits.MAX_PULL_MESSAGES:
        raise InvalidArgument(f"Invalid pushConfig.maxMessages: between 1 and {limits.MAX_PULL_MESSAGES}")
    if not 1 <= period <= limits.RETRY_BACKOFF_MAX * 1000:
        raise InvalidArgument(f"Invalid pushConfig.retryPolicy.period: between 1 and "
                              f"{limits.RETRY_BACKOFF_MAX * 1000} ms")
    return AmsPushRequest(endpoint, max_messages, _choice(retry.get("type", LINEAR) or LINEAR, (LINEAR, SLOWSTART),
                                                          "pushConfig.retryPolicy.type"),
                          period, _choice(auth.get("type", AUTOGEN) or AUTOGEN, (AUTOGEN, DISABLED),
                                          "pushConfig.authorizationHeader.type"))


def retry_policy(request: AmsPushRequest) -> RetryPolicy:
    """AMS's retry policy on Metro's scheduler: ``linear`` waits the period after a failed push,
    ``slowstart`` doubles the wait from one second after each failure (up to Google's 600 s)."""
    if request.retry_type == LINEAR:
        period = format_duration(request.retry_period_ms / 1000)
        return RetryPolicy(minimum_backoff=period, maximum_backoff=period)
    return RetryPolicy(minimum_backoff=format_duration(SLOWSTART_FIRST_SECONDS),
                       maximum_backoff=format_duration(limits.RETRY_BACKOFF_MAX))


def google_push_config(request: AmsPushRequest) -> PushConfig | None:
    return PushConfig(push_endpoint=request.endpoint) if request.endpoint else None


# -- verification and the generated authorization value, whichever dialect changes the push config ---------
def fresh_push(push: AmsPush, secret: Callable[[], str]) -> AmsPush:
    """``push`` for an endpoint nobody verified: a new verification hash and, with autogen, a new value."""
    return push.model_copy(update={"verified": False, "verification_hash": secret(),
                                   "authorization_value": secret() if push.authorization_type == AUTOGEN else ""})


def settled_push(before: AmsPush | None, push: AmsPush, endpoint_changed: bool,
                 secret: Callable[[], str]) -> AmsPush:
    """AMS's settings as an update of a subscription may store them (``before``: the stored ones).

    - A changed endpoint (AMS's ``:modifyPushConfig``, Google's ``:modifyPushConfig`` or PATCH) is never
      verified and never gets what was made for the old one: settings that still carry the old verification
      hash or authorization value, or ``verified``, are replaced by fresh ones (AMS's own route already makes them).
    - With the same endpoint, ``verified`` holds only for the stored hash, and a verification only sets the
      flag on the stored settings: anything else is a verification that raced with a change (ABORTED).
    """
    if endpoint_changed:
        carried = before is not None and (
            push.verification_hash == before.verification_hash
            or (bool(push.authorization_value) and push.authorization_value == before.authorization_value))
        return fresh_push(push, secret) if push.verified or carried else push
    if not push.verified:
        return push
    if before is None or push.verification_hash != before.verification_hash or (
            not before.verified and push != before.model_copy(update={"verified": True})):
        raise Aborted("The push configuration changed during the endpoint's verification; verify it again.")
    return push


# -- responses ------------------------------------------------------------------------------------------
def push_config_wire(endpoint: str, push: AmsPush | None, show_secret: bool = False) -> dict[str, Any]:
    """AMS's ``pushConfig`` of a subscription; a pull subscription has an empty endpoint. The generated
    authorization value is a credential of the endpoint's owner: shown only with ``show_secret`` (to the
    subscription's project_admins and service_admins), left out for anyone else who may read the subscription."""
    if not endpoint or push is None:
        return {"pushEndpoint": "", "maxMessages": 0, "authorizationHeader": {}, "retryPolicy": {},
                "verificationHash": "", "verified": False}
    auth: dict[str, Any] = {"type": push.authorization_type}
    if push.authorization_type == AUTOGEN and show_secret:
        auth["value"] = push.authorization_value
    return {"type": HTTP_ENDPOINT, "pushEndpoint": endpoint, "maxMessages": push.max_messages,
            "authorizationHeader": auth, "retryPolicy": {"type": push.retry_type, "period": push.retry_period_ms},
            "verificationHash": push.verification_hash, "verified": push.verified}


def message_wire(google: dict[str, Any]) -> dict[str, Any]:
    """A pulled message with the fields AMS clients know (argo-ams-library refuses others)."""
    return {k: google[k] for k in ("attributes", "data", "messageId", "publishTime") if k in google}


def received_wire(google: dict[str, Any]) -> dict[str, Any]:
    """A pull answer in AMS's shape: ``receivedMessages`` is always there."""
    return {"receivedMessages": [{"ackId": m["ackId"], "message": message_wire(m["message"])}
                                 for m in google.get("receivedMessages", [])]}


# -- the operational routes -----------------------------------------------------------------------------
SERVICE_METRICS = {
    "ams.number_of_projects": "Counter that displays the number of projects of the service",
    "ams.number_of_users": "Counter that displays the number of users of the service",
    "ams.number_of_topics": "Counter that displays the number of topics of the service",
    "ams.number_of_subscriptions": "Counter that displays the number of subscriptions of the service",
}


def service_metric(name: str, value: int, timestamp: str) -> dict[str, Any]:
    """One operational metric of ``GET /v1/metrics`` in AMS's metric shape."""
    return {"metric": name, "metric_type": "counter", "value_type": "int64", "resource_type": "ams_service",
            "resource_name": "metro", "timeseries": [{"timestamp": timestamp, "value": value}],
            "description": SERVICE_METRICS[name]}
