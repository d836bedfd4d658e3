"""Which AWS calls change the emulator's state, from the request alone (pure: no I/O).

The journal keeps the calls that change state and were answered 2xx; reads are not kept. A ReceiveMessage
changes state only when it hands out messages (their receipt handles, receive counts and visibility), so the
recorder keeps it only then; a long poll is run as short polls so that it never holds the emulator's lock while
it waits (chalicelib/local/durable/recorder.py).
"""

from __future__ import annotations

import json
from enum import StrEnum
from urllib.parse import parse_qs, urlencode

# Actions (JSON and query protocols) that read: by prefix, and by name.
_READ_PREFIXES = ("Get", "List", "Describe", "Query", "Scan", "BatchGet", "TransactGet", "Head")
_READS = frozenset({"Decrypt", "Encrypt", "GenerateDataKey"})  # KMS: no state changes
_LAMBDA_INVOKE = "/invocations"  # POST /2015-03-31/functions/<name>/invocations: runs code, changes no state


class Kind(StrEnum):
    read = "read"
    write = "write"
    receive = "receive"


def action_of(headers: dict[str, str], body: bytes) -> str:
    """The action of a JSON-protocol (``X-Amz-Target``) or query-protocol (``Action=``) call; "" for REST."""
    target = headers.get("HTTP_X_AMZ_TARGET", "")
    if target:
        return target.rsplit(".", 1)[-1]
    if "x-www-form-urlencoded" in headers.get("CONTENT_TYPE", ""):
        return (parse_qs(body.decode("utf-8", "replace")).get("Action") or [""])[0]
    return ""


def kind_of(environ: dict[str, str], body: bytes) -> Kind:
    action = action_of(environ, body)
    if action == "ReceiveMessage":
        return Kind.receive
    if action:
        return Kind.read if action in _READS or action.startswith(_READ_PREFIXES) else Kind.write
    method = environ.get("REQUEST_METHOD", "GET").upper()  # REST: S3, Lambda
    if method in ("GET", "HEAD", "OPTIONS") or environ.get("PATH_INFO", "").endswith(_LAMBDA_INVOKE):
        return Kind.read
    return Kind.write


def receive_wait(environ: dict[str, str], body: bytes) -> tuple[int, bytes]:
    """A ReceiveMessage's WaitTimeSeconds, and its body asking for a short poll instead."""
    if environ.get("HTTP_X_AMZ_TARGET"):
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            return 0, body
        if not isinstance(params, dict):
            return 0, body
        wait = _seconds(params.get("WaitTimeSeconds"))
        return wait, json.dumps({**params, "WaitTimeSeconds": 0}).encode() if wait else body
    form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    wait = _seconds((form.get("WaitTimeSeconds") or ["0"])[0])
    if not wait:
        return 0, body
    form["WaitTimeSeconds"] = ["0"]
    return wait, urlencode(form, doseq=True).encode()


def _seconds(value: object) -> int:
    try:
        return max(0, min(int(str(value)), 20))  # SQS's own bound
    except ValueError:
        return 0


def handed_out_messages(response_body: bytes) -> bool:
    """Whether a ReceiveMessage's answer holds messages (JSON or XML protocol)."""
    return b'"ReceiptHandle"' in response_body or b"<ReceiptHandle>" in response_body
