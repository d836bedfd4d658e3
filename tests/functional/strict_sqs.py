"""An SQS client double that enforces what AWS enforces on SendMessageBatch (moto 5.2.5 checks only sizes).

Wraps a real client (moto's, in the functional tests) or none (unit tests: sends are only recorded).
Rules, from the SendMessageBatch API reference: at most 10 entries; the total payload at most 262,144
bytes (the conservative figure Metro plans by; a lone message may be up to 1 MiB); bodies only of
``#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF``; group and deduplication ids 1-128
characters of ASCII letters, digits and punctuation. A whole call that breaks a rule fails as SQS's
does (ClientError, HTTP 400); an entry that breaks one fails alone, with SenderFault.
"""

from __future__ import annotations

import re
import string
from typing import Any

from botocore.exceptions import ClientError

BATCH_BYTES = 262_144
MESSAGE_BYTES = 1_048_576
_BODY = re.compile("^[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*$")
_ID = frozenset(string.ascii_letters + string.digits + string.punctuation)


def refused(code: str, operation: str = "SendMessageBatch") -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": code, "Type": "Sender"},
                     "ResponseMetadata": {"HTTPStatusCode": 400}}
    return ClientError(response, operation)


def valid_id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 128 and all(c in _ID for c in value)


def entry_error(entry: dict[str, Any]) -> str:
    """Why SQS would refuse this entry ("" when it would not)."""
    if not _BODY.match(entry["MessageBody"]):
        return "InvalidMessageContents"
    if len(entry["MessageBody"].encode()) > MESSAGE_BYTES:
        return "InvalidParameterValue"
    for key in ("MessageGroupId", "MessageDeduplicationId"):
        if key in entry and not valid_id(entry[key]):
            return "InvalidParameterValue"
    return ""


def batch_error(entries: list[dict[str, Any]]) -> str:
    """Why SQS would refuse the whole call ("" when it would not)."""
    if not entries:
        return "EmptyBatchRequest"
    if len(entries) > 10:
        return "TooManyEntriesInBatchRequest"
    total = sum(len(e["MessageBody"].encode()) for e in entries)
    if total > (BATCH_BYTES if len(entries) > 1 else MESSAGE_BYTES):
        return "BatchRequestTooLong"
    return ""


class StrictSqs:
    """``send_message_batch`` checked against AWS's rules; every other call goes to ``inner``.

    ``calls`` records every SendMessageBatch (its entries); ``transient`` maps a message body substring to
    how many times an entry holding it fails with a passing error (InternalError, SenderFault false);
    an entry whose body holds one of ``poison`` is refused, as the whole call when ``whole_call`` (as
    moto refuses an invalid entry) or as that entry alone.
    """

    def __init__(self, inner: Any = None, whole_call: bool = False) -> None:
        self.inner = inner
        self.whole_call = whole_call
        self.calls: list[list[dict[str, Any]]] = []
        self.sent: list[dict[str, Any]] = []
        self.transient: dict[str, int] = {}
        self.poison: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(list(Entries))
        problem = batch_error(Entries)
        if problem:
            raise refused(problem)
        if self.whole_call and any(self._poisoned(e) for e in Entries):
            raise refused("InvalidParameterValue")
        good, failed = [], []
        for e in Entries:
            code = entry_error(e) or ("InvalidMessageContents" if self._poisoned(e) else "")
            if code:
                failed.append({"Id": e["Id"], "SenderFault": True, "Code": code, "Message": code})
            elif self._fails_now(e["MessageBody"]):
                failed.append({"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "retry"})
            else:
                good.append(e)
        resp: dict[str, Any] = {"Successful": [{"Id": e["Id"]} for e in good], "Failed": failed}
        if good and self.inner is not None:
            inner = self.inner.send_message_batch(QueueUrl=QueueUrl, Entries=good)
            resp["Failed"] += inner.get("Failed", [])
        self.sent += good
        return resp

    def _poisoned(self, entry: dict[str, Any]) -> bool:
        return any(p in entry["MessageBody"] for p in self.poison)

    def _fails_now(self, body: str) -> bool:
        for marker, left in self.transient.items():
            if marker in body and left > 0:
                self.transient[marker] = left - 1
                return True
        return False
