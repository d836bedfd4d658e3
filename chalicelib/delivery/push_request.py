"""The push request: the POST for one message (the seed document's format) and the pooled HTTP client."""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3

from chalicelib.core import envelope
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.timefmt import format_timestamp, parse_timestamp
from chalicelib.service.deadletter import max_attempts

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_RESERVED = {"authorization", "connection", "content-length", "content-type", "host", "te", "trailer",
             "transfer-encoding", "upgrade", "expect", "keep-alive", "proxy-authorization", "user-agent"}
USER_AGENT = "Metro-Push/1 (+Google Pub/Sub compatible)"

# (url, body, headers, timeout seconds) -> HTTP status, or None for a timeout or connection error
Poster = Callable[[str, bytes, dict[str, str], float], int | None]


# -- HTTP ----------------------------------------------------------------------------------------------
_POOL = urllib3.PoolManager(num_pools=64, maxsize=16, block=False, retries=False)


def http_post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int | None:
    """POST with a pooled keep-alive connection; None on a timeout or a connection failure."""
    try:
        resp = _POOL.request("POST", url, body=body, headers=headers, preload_content=False, redirect=False,
                             timeout=urllib3.Timeout(connect=min(timeout, 10.0), read=timeout))
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        log.info("push to %s failed: %s", url, exc.__class__.__name__)
        return None
    try:
        if resp.status < 200:  # 102 Processing: a final answer may follow on this connection; drop it
            conn = resp.connection
            if conn is not None:
                conn.close()
        else:
            resp.drain_conn()
    except (urllib3.exceptions.HTTPError, OSError):
        pass
    finally:
        resp.release_conn()
    return int(resp.status)


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


def _header_value(value: str) -> str:
    """Header values go out as Latin-1; other text is sent as its UTF-8 bytes."""
    try:
        value.encode("latin-1")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8").decode("latin-1")


def build_request(rec: SubscriptionRecord, item: Item, token: str | None) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the POST for one message (the seed document's format)."""
    pc = rec.spec.push_config
    env, data = item.env, item.data or b""
    assert pc is not None and env is not None
    publish_time = format_timestamp(parse_timestamp(env.publish_time, "publish_time"))
    dead_letter = max_attempts(rec) > 0
    headers = {"User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if pc.no_wrapper is not None:
        headers["Content-Type"] = "application/octet-stream"
        if pc.no_wrapper.write_metadata:
            meta = {"message-id": env.message_id, "publish-time": publish_time, "subscription-name": rec.name}
            if env.ordering_key:
                meta["ordering-key"] = env.ordering_key
            if dead_letter:
                meta["delivery-attempt"] = str(item.attempt)
            headers.update({f"x-goog-pubsub-{k}": _header_value(v) for k, v in meta.items()})
            for key, value in env.attributes.items():
                low = key.lower()
                if _TOKEN.match(key) and low not in _RESERVED and not low.startswith("x-goog-pubsub-"):
                    headers[key] = _header_value(value)
        return data, headers
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
    if dead_letter:
        body["deliveryAttempt"] = item.attempt
    headers["Content-Type"] = "application/json"
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), headers
