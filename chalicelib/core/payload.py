"""The raw publish bytes of one publish request: an S3 object, or a small request's log item (a contract with
spark_emr/).

Layout (version 1), documented in docs/storage.md:

    line 1   : compact JSON header, UTF-8, terminated by a single b"\\n"
    the rest : the message bodies, concatenated in publish order

The header is ``{"v": 1, "topic": str, "request_id": str, "publish_time": RFC 3339 str,
"messages": [{"id": str, "o": int, "n": int, "a": {str: str}, "k": str}]}`` where ``o`` is
the offset of the body relative to the first byte after the header line and ``n`` its
length. ``a`` (attributes) and ``k`` (ordering key) are omitted when empty. A body lives at
absolute bytes ``[body_start + o, body_start + o + n)`` with ``body_start = len(header line)``,
so one message can be read with an S3 range GET.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from chalicelib.core.errors import Internal

VERSION = 1


@dataclass(frozen=True)
class StoredMessage:
    message_id: str
    data: bytes
    attributes: dict[str, str] = field(default_factory=dict)
    ordering_key: str = ""


@dataclass(frozen=True)
class Entry:
    """Where one message's body lives inside a raw object, plus its metadata."""

    message_id: str
    offset: int  # absolute offset in the object
    length: int
    attributes: dict[str, str]
    ordering_key: str


@dataclass(frozen=True)
class Header:
    topic: str
    request_id: str
    publish_time: str
    body_start: int
    entries: list[Entry]


def encode(topic: str, request_id: str, publish_time: str, messages: list[StoredMessage]) -> tuple[bytes, int]:
    """Return the object bytes and the body start offset."""
    index = []
    offset = 0
    for m in messages:
        item: dict[str, object] = {"id": m.message_id, "o": offset, "n": len(m.data)}
        if m.attributes:
            item["a"] = m.attributes
        if m.ordering_key:
            item["k"] = m.ordering_key
        index.append(item)
        offset += len(m.data)
    header = {"v": VERSION, "topic": topic, "request_id": request_id, "publish_time": publish_time, "messages": index}
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    return head + b"".join(m.data for m in messages), len(head)


def decode_header(blob: bytes) -> Header:
    """Parse the header of a raw object (``blob`` may be the whole object or just its prefix)."""
    end = blob.find(b"\n")
    if end < 0:
        raise Internal("corrupt raw object: no header line")
    head = json.loads(blob[:end])
    if head.get("v") != VERSION:
        raise Internal(f"unsupported raw object version {head.get('v')!r}")
    start = end + 1
    entries = [
        Entry(m["id"], start + m["o"], m["n"], m.get("a", {}), m.get("k", "")) for m in head["messages"]
    ]
    return Header(head["topic"], head["request_id"], head["publish_time"], start, entries)


def decode(blob: bytes) -> tuple[Header, list[StoredMessage]]:
    """Parse a whole raw object into its header and messages."""
    header = decode_header(blob)
    messages = [
        StoredMessage(e.message_id, blob[e.offset : e.offset + e.length], e.attributes, e.ordering_key)
        for e in header.entries
    ]
    return header, messages


RAW_SUFFIX = ".mpub"  # the bytes are an S3 object of that key
INLINE_SUFFIX = ".inline"  # the bytes are in the log item (no S3 object has that key)


def raw_key(topic: str, request_id: str, publish_time_iso: str, inline: bool = False) -> str:
    """Key of a publish request: ``raw/{project}/{topic-id}/{YYYY}/{MM}/{DD}/{HH}/{request_id}.mpub``,
    or ``.inline`` for a request whose bytes live in its log item only.

    ``publish_time_iso`` is RFC 3339 UTC (``2026-11-22T04:59:06.136000Z``); keys of one topic and
    hour share a prefix, which is what compaction lists and archives.
    """
    _, project, _, topic_id = topic.split("/", 3)
    date, clock = publish_time_iso.split("T")
    yyyy, mm, dd = date.split("-")
    suffix = INLINE_SUFFIX if inline else RAW_SUFFIX
    return f"raw/{project}/{topic_id}/{yyyy}/{mm}/{dd}/{clock[:2]}/{request_id}{suffix}"


def fits_log_item(blob: bytes, messages: list[StoredMessage], log_max: int, queue_inline_max: int) -> bool:
    """Whether a request's bytes may live in its log item: at most ``log_max`` bytes, and every body small
    enough to travel inline in the queue message (nothing may ever point into an S3 object it lacks)."""
    return len(blob) <= log_max and all(len(m.data) <= queue_inline_max for m in messages)
