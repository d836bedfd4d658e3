"""Request bodies and query parameters -> typed request values (core/wire/requests.py, and the resource
models of core/wire/models.py for create and patch).

Every check of the wire form lives here: JSON objects, proto3 JSON scalars (fields.py), the API's
bounds on each field, update masks, a resource name in the body against the URL's. Services receive
values that are already valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.wire.fields import bool_field, int_field
from chalicelib.core.wire.messages import parse_publish
from chalicelib.core.wire.models import PushConfig, Subscription, Topic, Wire, mask_paths, parse_model
from chalicelib.core.wire.requests import (
    AcknowledgeRequest,
    ModifyAckDeadlineRequest,
    ModifyPushConfigRequest,
    PageRequest,
    PublishRequest,
    PullRequest,
    UpdateSubscriptionRequest,
    UpdateTopicRequest,
)

M = TypeVar("M", bound=Wire)

# Update mask paths (snake_case, as Google names them) -> the field of the resource model they replace.
TOPIC_UPDATABLE = {
    "labels": "labels",
    "message_storage_policy": "message_storage_policy",
    "kms_key_name": "kms_key_name",
    "schema_settings": "schema_settings",
    "message_retention_duration": "message_retention_duration",
    "ingestion_data_source_settings": "ingestion_data_source_settings",
    "message_transforms": "message_transforms",
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
    "cloud_storage_config": "cloud_storage_config",
    "message_transforms": "message_transforms",
}


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    return body


def _or_empty(value: Any) -> Any:
    """An absent (or null) message field is the empty message; any other non-object is refused by parse_model."""
    return {} if value is None else value


def _same_name(given: object, name: Name) -> None:
    if given and given != name.path:
        raise InvalidArgument(f"The name in the body ({given}) does not match the URL ({name.path}).")


def _masked(model: M, mask: list[str]) -> M:
    """Only the fields an update mask names (the rest of a patch body is ignored, so it names nothing)."""
    return type(model).model_construct(**{field: getattr(model, field) for field in mask})


def _only_fields(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise InvalidArgument(f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}": Cannot find field.')


# -- topics and subscriptions ---------------------------------------------------------------------------
def topic_request(body: Any, name: Name) -> Topic:
    """``PUT .../topics/{t}``: the Topic to create (a name in the body must be the URL's)."""
    topic = parse_model(Topic, body, "topic")
    _same_name(topic.name, name)
    return topic


def subscription_request(body: Any, name: Name) -> Subscription:
    """``PUT .../subscriptions/{s}``: the Subscription to create (a name in the body must be the URL's)."""
    subscription = parse_model(Subscription, body, "subscription")
    if subscription.ams_push is not None or subscription.ams_offset_ms:  # AMS's own settings: its dialect only
        raise InvalidArgument('Invalid JSON payload received. Unknown name "amsPush": Cannot find field.')
    _same_name(subscription.name, name)
    return subscription


def update_topic_request(body: Any, name: Name) -> UpdateTopicRequest:
    fields = _object(body)
    topic = parse_model(Topic, _or_empty(fields.get("topic")), "topic")
    mask = mask_paths(fields.get("updateMask", fields.get("update_mask")), TOPIC_UPDATABLE, "UpdateTopicRequest")
    _same_name(topic.name, name)
    return UpdateTopicRequest(_masked(topic, mask), tuple(mask))


def update_subscription_request(body: Any, name: Name) -> UpdateSubscriptionRequest:
    fields = _object(body)
    subscription = parse_model(Subscription, _or_empty(fields.get("subscription")), "subscription")
    mask = mask_paths(fields.get("updateMask", fields.get("update_mask")), SUBSCRIPTION_UPDATABLE,
                      "UpdateSubscriptionRequest")
    _same_name(subscription.name, name)
    return UpdateSubscriptionRequest(_masked(subscription, mask), tuple(mask))


def modify_push_config_request(body: Any, name: Name) -> ModifyPushConfigRequest:
    """``POST .../subscriptions/{s}:modifyPushConfig`` with ``{"pushConfig": {...}}`` (absent = pull)."""
    fields = _object(body)
    _only_fields(fields, {"pushConfig", "push_config", "subscription"})
    _same_name(fields.get("subscription"), name)
    raw = _or_empty(fields.get("pushConfig", fields.get("push_config")))
    return ModifyPushConfigRequest(parse_model(PushConfig, raw, "push_config"))


# -- messages -------------------------------------------------------------------------------------------
def publish_request(body: Any) -> PublishRequest:
    """``POST .../topics/{t}:publish``: messages checked against Google's limits (core/wire/messages.py)."""
    return PublishRequest(tuple(parse_publish(body)))


# -- pull, acknowledge, modifyAckDeadline ------------------------------------------------------------
def _ack_ids(body: dict[str, Any]) -> tuple[str, ...]:
    raw = body.get("ackIds", body.get("ack_ids"))
    if not isinstance(raw, list) or not raw:
        raise InvalidArgument("No ack ids were given (ack_ids must not be empty).")
    if not all(isinstance(a, str) for a in raw):
        raise InvalidArgument("Invalid value at 'ack_ids' (TYPE_STRING): every ack id must be a string.")
    if sum(len(a) for a in raw) > limits.MAX_ACK_REQUEST_BYTES:  # ack ids are ASCII: characters are bytes
        raise InvalidArgument(f"Request payload size exceeds the limit: {limits.MAX_ACK_REQUEST_BYTES} bytes.")
    return tuple(dict.fromkeys(raw))  # each message is settled once, however often its id is repeated


def pull_request(body: Any) -> PullRequest:
    fields = _object(body)
    max_messages = int_field(fields, "maxMessages", "max_messages")
    if not 0 < max_messages <= limits.MAX_PULL_MESSAGES:
        raise InvalidArgument(f"max_messages must be between 1 and {limits.MAX_PULL_MESSAGES}.")
    return PullRequest(max_messages, bool_field(fields, "returnImmediately", "return_immediately"))


def acknowledge_request(body: Any) -> AcknowledgeRequest:
    return AcknowledgeRequest(_ack_ids(_object(body)))


def modify_ack_deadline_request(body: Any) -> ModifyAckDeadlineRequest:
    fields = _object(body)
    seconds = int_field(fields, "ackDeadlineSeconds", "ack_deadline_seconds")
    if not 0 <= seconds <= limits.MODIFY_DEADLINE_MAX:
        raise InvalidArgument(f"ack_deadline_seconds must be between 0 and {limits.MODIFY_DEADLINE_MAX}.")
    return ModifyAckDeadlineRequest(_ack_ids(fields), seconds)


# -- list paging ----------------------------------------------------------------------------------------
def page_request(params: Mapping[str, str]) -> PageRequest:
    raw = params.get("pageSize", params.get("page_size", "0")) or "0"
    try:
        size = int(raw)
    except ValueError:
        raise InvalidArgument(f"Invalid page_size: {raw!r}") from None
    if size < 0:
        raise InvalidArgument("page_size must not be negative")
    return PageRequest(min(size or limits.DEFAULT_PAGE_SIZE, limits.MAX_PAGE_SIZE),
                       params.get("pageToken", params.get("page_token", "")))
