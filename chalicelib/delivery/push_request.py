"""The push request: the POST for one message (the seed document's format), sent with the checked HTTP client."""

from __future__ import annotations

import base64
import json
import logging
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.queueing import envelope
from chalicelib.core.queueing.deadletter import max_attempts
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import format_timestamp, parse_timestamp
from chalicelib.store import http_client
from chalicelib.store.http_answer import Deadline
from chalicelib.store.resolver import EndpointResolver

log = logging.getLogger(__name__)

# Attribute keys that never become headers (noWrapper.writeMetadata): hop-by-hop, framing, routing and
# credential headers, and whole families of them by prefix (docs/security.md).
_DENIED_HEADERS = frozenset({
    "authorization", "connection", "content-encoding", "content-length", "content-location", "content-md5",
    "content-range", "content-type", "cookie", "cookie2", "expect", "forwarded", "host", "keep-alive",
    "max-forwards", "origin", "range", "referer", "set-cookie", "te", "trailer", "trailers", "transfer-encoding",
    "upgrade", "user-agent", "via", "x-real-ip", "x-client-ip", "true-client-ip", "x-http-method-override",
    "x-method-override", "x-original-url", "x-rewrite-url", "x-csrf-token", "x-xsrf-token", "x-api-key",
})
_DENIED_PREFIXES = ("x-goog-", "x-forwarded-", "proxy-", "sec-", "x-amz-", "x-amzn-", "x-envoy-", "x-cloud-",
                    "cf-", "x-ms-")
USER_AGENT = "Metro-Push/1 (+Google Pub/Sub compatible)"

# (url, body, headers, timeout seconds) -> HTTP status, or None for a timeout or connection error
Poster = Callable[[str, bytes, dict[str, str], float], int | None]


# -- HTTP ----------------------------------------------------------------------------------------------
def http_poster(resolver: EndpointResolver) -> Poster:
    """The Poster of push delivery: POST to a checked address of ``url`` (the endpoint checked by ``resolver``,
    store/resolver.py; sent by store/http_client.py), all within ``timeout`` seconds.

    None for an endpoint that fails the check (Metro's own ports included), a timeout, a connection
    failure, or any other error of this one request: one bad push is a nack of its message only.
    """
    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int | None:
        deadline = Deadline.after(timeout)
        try:
            return http_client.post(resolver.checked(url, timeout), body, headers, deadline)
        except InvalidArgument as err:
            log.warning("not pushing: %s", err.message)
        except Exception as exc:  # whatever one request raises, only its message is nacked
            log.info("push to %s failed: %s", url, exc.__class__.__name__)
        return None

    return post


# -- the push request -----------------------------------------------------------------------------------
@dataclass
class Item:
    """One SQS record of the batch and what delivery needs of it."""

    sqs_id: str
    receipt: str
    attempt: int
    group: str
    env: envelope.Envelope | None
    data: bytes | None = None
    skips: int = 0  # earlier receives that were not deliveries (attempt = receive count - skips)


def _header_value(value: str) -> str | None:
    """Header values go out as Latin-1 (other text as its UTF-8 bytes); None for text with control characters."""
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        return None
    try:
        value.encode("latin-1")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("latin-1")


def attribute_header(key: str) -> bool:
    """Whether an attribute named ``key`` may become a request header (noWrapper.writeMetadata)."""
    low = key.lower()
    return http_client.is_token(key) and low not in _DENIED_HEADERS and not low.startswith(_DENIED_PREFIXES)


def metadata_headers(rec: SubscriptionRecord, item: Item, publish_time: str) -> dict[str, str]:
    """The ``x-goog-pubsub-*`` metadata and the attributes that may be headers, with safe values only."""
    env = item.env
    assert env is not None
    meta = {"message-id": env.message_id, "publish-time": publish_time, "subscription-name": rec.name}
    if env.ordering_key:
        meta["ordering-key"] = env.ordering_key
    if max_attempts(rec) > 0:
        meta["delivery-attempt"] = str(item.attempt)
    pairs = [(f"x-goog-pubsub-{k}", v) for k, v in meta.items()]
    pairs += [(k, v) for k, v in env.attributes.items() if attribute_header(k)]
    headers: dict[str, str] = {}
    for name, value in pairs:
        safe = _header_value(value)
        if safe is not None:
            headers[name] = safe
    return headers


def build_request(rec: SubscriptionRecord, item: Item, token: str | None) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the POST for one message (the seed document's format)."""
    pc = rec.spec.push_config
    env, data = item.env, item.data or b""
    assert pc is not None and env is not None
    headers = request_headers(rec, token)
    if pc.no_wrapper is not None:
        headers["Content-Type"] = "application/octet-stream"
        if pc.no_wrapper.write_metadata:
            headers.update(metadata_headers(rec, item, _publish_time(env)))
        return data, headers
    headers["Content-Type"] = "application/json"
    return _json(wrapped_body(rec, item)), headers


def request_headers(rec: SubscriptionRecord, token: str | None) -> dict[str, str]:
    """User-Agent, and the push token (or AMS's generated authorization value) as Authorization."""
    headers = {"User-Agent": USER_AGENT}
    ams = rec.spec.ams_push
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif ams is not None and ams.authorization_type == "autogen" and ams.authorization_value:
        headers["Authorization"] = ams.authorization_value
    return headers


def _publish_time(env: envelope.Envelope) -> str:
    return format_timestamp(parse_timestamp(env.publish_time, "publish_time"))


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


def wrapped_body(rec: SubscriptionRecord, item: Item) -> dict[str, Any]:
    """The JSON object pushed for one message: ``{"message": {...}, "subscription": ...}``."""
    env, data = item.env, item.data or b""
    assert env is not None
    publish_time = _publish_time(env)
    message: dict[str, Any] = {
        "data": base64.b64encode(data).decode("ascii"),
        "attributes": env.attributes,
        "messageId": env.message_id,
        "message_id": env.message_id,
        "publishTime": publish_time,
        "publish_time": publish_time,
    }
    if env.ordering_key:
        message["orderingKey"] = env.ordering_key
    body: dict[str, Any] = {"message": message, "subscription": rec.name}
    if max_attempts(rec) > 0:
        body["deliveryAttempt"] = item.attempt
    return body


def build_batch_request(rec: SubscriptionRecord, items: list[Item], token: str | None) -> tuple[bytes, dict[str, str]]:
    """AMS's body for ``maxMessages`` > 1: ``{"messages": [{"message": {...}, "subscription": ...}, ...]}``."""
    headers = request_headers(rec, token)
    headers["Content-Type"] = "application/json"
    return _json({"messages": [wrapped_body(rec, item) for item in items]}), headers
