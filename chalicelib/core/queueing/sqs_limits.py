"""What SQS accepts in a SendMessageBatch, and how a queue message is made to fit.

SQS's rules (API reference of SendMessage and SendMessageBatch):

- at most 10 entries per call; the call's total payload (the sum of the message bodies, counted in
  UTF-8 bytes) at most 262,144 bytes, which is the conservative figure: SQS raised both a message and a
  batch to 1 MiB (1,048,576 bytes) in 2025, and moto 5.2.5 enforces 1 MiB counted in characters;
- a body may hold only ``#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF``;
- MessageGroupId and MessageDeduplicationId: 1 to 128 characters of ASCII letters, digits and
  punctuation.

Queue bodies are compact JSON (core/queueing/envelope.py), and a character SQS refuses can only occur inside a
JSON string there, so :func:`escape_body` replaces it with its ``\\uXXXX`` escape: ``json.loads`` reads
the very same text back. Google's ordering keys (up to 1,024 bytes of any text) become group ids with
:func:`group_id`; the envelope keeps the real key.
"""

from __future__ import annotations

import hashlib
import re
import string

BATCH_ENTRIES = 10
BATCH_BYTES = 262_144  # a SendMessageBatch's total payload, and the usual bound of one message
ID_CHARS_MAX = 128

_REFUSED = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ID_ALPHABET = frozenset(string.ascii_letters + string.digits + string.punctuation)
HASHED_PREFIX = "h-"


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_body(text: str) -> str:
    """``text`` (compact JSON) with every character SQS refuses written as a JSON ``\\uXXXX`` escape."""
    if text.isascii() and text.isprintable():  # the usual body (base64 data, ASCII JSON): nothing to escape
        return text
    if _REFUSED.search(text) is None:
        return text
    # The two SQS refuses in valid text are replaced in bulk; the rest (control characters json.dumps
    # would have escaped, lone surrogates) one by one.
    text = text.replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")
    return _REFUSED.sub(_escape, text)


def body_bytes(text: str) -> int:
    """The size SQS counts for this queue body once escaped (UTF-8 bytes)."""
    return len(escape_body(text).encode())


def valid_body(text: str) -> bool:
    """Whether SQS accepts ``text`` as a message body as it is."""
    return _REFUSED.search(text) is None


def valid_id(value: str) -> bool:
    """Whether ``value`` is a MessageGroupId / MessageDeduplicationId SQS accepts."""
    return 0 < len(value) <= ID_CHARS_MAX and all(c in _ID_ALPHABET for c in value)


def safe_id(value: str) -> str:
    """``value`` itself when SQS accepts it as a group or deduplication id, else a stable hash form.

    The hash form is ``h-`` and the SHA-256 of the value's UTF-8 bytes in hex (66 characters), so
    equal keys always meet in the same message group. Lone surrogates (never valid publishes) hash too.
    """
    if valid_id(value):
        return value
    return HASHED_PREFIX + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def group_id(ordering_key: str, message_id: str) -> str:
    """The MessageGroupId of a message in a FIFO queue: its ordering key, or its own id without one."""
    return safe_id(ordering_key or message_id)
