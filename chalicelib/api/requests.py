"""Request bodies and query parameters -> typed request values (chalicelib/core/requests.py).

Every check of the wire form lives here: JSON objects, proto3 JSON scalars (fields.py), the API's
bounds on each field. Services receive values that are already valid.
"""

from __future__ import annotations

from typing import Any

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.fields import bool_field, int_field
from chalicelib.core.requests import AcknowledgeRequest, ModifyAckDeadlineRequest, PageRequest, PullRequest


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    return body


def _ack_ids(body: dict[str, Any]) -> tuple[str, ...]:
    raw = body.get("ackIds", body.get("ack_ids"))
    if not isinstance(raw, list) or not raw:
        raise InvalidArgument("No ack ids were given (ack_ids must not be empty).")
    if not all(isinstance(a, str) for a in raw):
        raise InvalidArgument("Invalid value at 'ack_ids' (TYPE_STRING): every ack id must be a string.")
    return tuple(raw)


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


def page_request(params: dict[str, str]) -> PageRequest:
    raw = params.get("pageSize", params.get("page_size", "0")) or "0"
    try:
        size = int(raw)
    except ValueError:
        raise InvalidArgument(f"Invalid page_size: {raw!r}") from None
    if size < 0:
        raise InvalidArgument("page_size must not be negative")
    return PageRequest(min(size or limits.DEFAULT_PAGE_SIZE, limits.MAX_PAGE_SIZE),
                       params.get("pageToken", params.get("page_token", "")))
