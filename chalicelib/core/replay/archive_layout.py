"""The Parquet archive of compacted raw objects (a contract between spark_emr/ and the service). Pure: no I/O.

Layout, one folder per topic and UTC hour of publish time::

    archive/{project}/{topic-id}/{YYYY}/{MM}/{DD}/{HH}/part-{digest}-{n:05d}.parquet
    archive/{project}/{topic-id}/{YYYY}/{MM}/{DD}/{HH}/_manifest.json

``digest`` is a hash of the full set of raw object keys the hour's archive covers, so a run over
the same input writes the same file names (re-runs overwrite, never add) and a new generation
(more raw objects for an hour that already has a manifest) writes new names beside the old ones.

The manifest is written last and is the commit point: the hour's archive is exactly the files it
lists; other ``part-*`` files in the folder are leftovers of an interrupted run. A raw object whose
key is listed in ``raw_keys`` is covered by the archive: its messages must be read from the archive
only, even while the object still exists (compaction deletes it after the commit).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from chalicelib.core.payload import INLINE_SUFFIX, RAW_SUFFIX

ARCHIVE_PREFIX = "archive/"
RAW_PREFIX = "raw/"
MANIFEST_NAME = "_manifest.json"
MANIFEST_VERSION = 1
HOUR_MS = 3_600_000


# --- time and ids ---------------------------------------------------------------------------


def publish_ms(message_or_request_id: str) -> int:
    """Publish time (ms since the epoch) of a message id or request id: its first 13 digits."""
    head = message_or_request_id[:13]
    if len(head) != 13 or not head.isdigit():
        raise ValueError(f"not a message id: {message_or_request_id!r}")
    return int(head)


def hour_start_ms(ms: int) -> int:
    return ms - ms % HOUR_MS


def hour_of_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(hour_start_ms(ms) / 1000, tz=timezone.utc)


def hour_of_message_id(message_id: str) -> datetime:
    """UTC hour (floored) in which a message (or request) was published."""
    return hour_of_ms(publish_ms(message_id))


def hour_ms(hour: datetime) -> int:
    """Epoch ms of the start of ``hour`` (an aware datetime, floored to the hour)."""
    return hour_start_ms(int(hour.timestamp() * 1000))


def hour_path(hour: datetime) -> str:
    h = hour.astimezone(timezone.utc)
    return f"{h.year:04d}/{h.month:02d}/{h.day:02d}/{h.hour:02d}"


def parse_hour_path(yyyy: str, mm: str, dd: str, hh: str) -> datetime:
    return datetime(int(yyyy), int(mm), int(dd), int(hh), tzinfo=timezone.utc)


def format_time(dt: datetime) -> str:
    """RFC 3339 UTC with microseconds, the form raw object headers use (``...T04:59:06.136000Z``)."""
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_hour(hour: datetime) -> str:
    return hour.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:00:00Z")


def parse_time(text: str) -> datetime:
    """Parse RFC 3339 (``Z`` or offset, optional fraction) into an aware UTC datetime."""
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


# --- names and keys ---------------------------------------------------------------------------


def split_topic(topic: str) -> tuple[str, str]:
    """``projects/p/topics/t`` -> ``("p", "t")``."""
    parts = topic.split("/")
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != "topics" or not parts[1] or not parts[3]:
        raise ValueError(f"not a topic name: {topic!r}")
    return parts[1], parts[3]


def topic_name(project: str, topic_id: str) -> str:
    return f"projects/{project}/topics/{topic_id}"


def raw_topic_prefix(topic: str) -> str:
    project, topic_id = split_topic(topic)
    return f"{RAW_PREFIX}{project}/{topic_id}/"


def raw_hour_prefix(topic: str, hour: datetime) -> str:
    return f"{raw_topic_prefix(topic)}{hour_path(hour)}/"


def archive_topic_prefix(topic: str) -> str:
    project, topic_id = split_topic(topic)
    return f"{ARCHIVE_PREFIX}{project}/{topic_id}/"


def archive_hour_prefix(topic: str, hour: datetime) -> str:
    return f"{archive_topic_prefix(topic)}{hour_path(hour)}/"


def manifest_key(topic: str, hour: datetime) -> str:
    return archive_hour_prefix(topic, hour) + MANIFEST_NAME


def part_key(topic: str, hour: datetime, digest: str, n: int) -> str:
    return f"{archive_hour_prefix(topic, hour)}part-{digest}-{n:05d}.parquet"


@dataclass(frozen=True)
class RawKey:
    topic: str
    hour: datetime
    request_id: str

    @property
    def publish_ms(self) -> int:
        return publish_ms(self.request_id)


RAW_SUFFIXES = (RAW_SUFFIX, INLINE_SUFFIX)  # an S3 object; bytes kept in the log item (core/payload.py)


def parse_raw_key(key: str) -> RawKey:
    """``raw/{project}/{topic-id}/{YYYY}/{MM}/{DD}/{HH}/{request_id}.mpub`` (or ``.inline``) -> its parts."""
    parts = key.split("/")
    suffix = next((s for s in RAW_SUFFIXES if parts[-1].endswith(s)), "")
    if len(parts) != 8 or parts[0] != "raw" or not suffix:
        raise ValueError(f"not a raw object key: {key!r}")
    _, project, topic_id, yyyy, mm, dd, hh, name = parts
    return RawKey(topic_name(project, topic_id), parse_hour_path(yyyy, mm, dd, hh), name[: -len(suffix)])


def is_inline_key(key: str) -> bool:
    """Whether a raw key names a request whose bytes are in its log item, not in S3."""
    return key.endswith(INLINE_SUFFIX)


@dataclass(frozen=True)
class ArchiveKey:
    topic: str
    hour: datetime
    name: str  # "_manifest.json" or "part-....parquet" (or anything else found in the folder)

    @property
    def is_manifest(self) -> bool:
        return self.name == MANIFEST_NAME


def parse_archive_key(key: str) -> ArchiveKey:
    parts = key.split("/")
    if len(parts) != 8 or parts[0] != "archive":
        raise ValueError(f"not an archive key: {key!r}")
    _, project, topic_id, yyyy, mm, dd, hh, name = parts
    return ArchiveKey(topic_name(project, topic_id), parse_hour_path(yyyy, mm, dd, hh), name)


def input_digest(raw_keys: Iterable[str]) -> str:
    """Deterministic 16-hex-digit hash of a set of raw keys (order and duplicates do not matter)."""
    h = hashlib.sha256()
    for key in sorted(set(raw_keys)):
        h.update(key.encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


# --- manifest ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ManifestFile:
    key: str
    rows: int
    data_bytes: int  # sum of message body sizes
    size: int  # object size in bytes
    first_id: str  # smallest message id in the file
    last_id: str  # largest message id in the file

    def may_hold(self, message_id: str) -> bool:
        return self.first_id <= message_id <= self.last_id


@dataclass(frozen=True)
class Manifest:
    topic: str
    hour: datetime
    generation: int
    digest: str
    files: list[ManifestFile]
    raw_keys: list[str]
    created: str = ""
    version: int = MANIFEST_VERSION
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def data_bytes(self) -> int:
        return sum(f.data_bytes for f in self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def file_keys(self) -> set[str]:
        return {f.key for f in self.files}

    def files_for(self, message_ids: Iterable[str]) -> list[ManifestFile]:
        """The files whose id range may hold one of ``message_ids`` (in manifest order)."""
        ids = sorted(set(message_ids))
        return [f for f in self.files if any(f.may_hold(m) for m in ids)]


def serialize_manifest(m: Manifest) -> bytes:
    body = {
        "v": m.version,
        "topic": m.topic,
        "hour": format_hour(m.hour),
        "generation": m.generation,
        "digest": m.digest,
        "created": m.created,
        "rows": m.rows,
        "data_bytes": m.data_bytes,
        "files": [
            {
                "key": f.key,
                "rows": f.rows,
                "data_bytes": f.data_bytes,
                "size": f.size,
                "first_id": f.first_id,
                "last_id": f.last_id,
            }
            for f in m.files
        ],
        "raw_keys": sorted(m.raw_keys),
        **m.extra,
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=False).encode()


_KNOWN = {"v", "topic", "hour", "generation", "digest", "created", "rows", "data_bytes", "files", "raw_keys"}


def parse_manifest(blob: bytes | str) -> Manifest:
    body = json.loads(blob)
    if body.get("v") != MANIFEST_VERSION:
        raise ValueError(f"unsupported manifest version {body.get('v')!r}")
    files = [
        ManifestFile(
            key=f["key"],
            rows=int(f["rows"]),
            data_bytes=int(f.get("data_bytes", 0)),
            size=int(f.get("size", 0)),
            first_id=f.get("first_id", ""),
            last_id=f.get("last_id", "\uffff"),
        )
        for f in body["files"]
    ]
    return Manifest(
        topic=body["topic"],
        hour=parse_time(body["hour"]),
        generation=int(body["generation"]),
        digest=body["digest"],
        files=files,
        raw_keys=list(body.get("raw_keys", [])),
        created=body.get("created", ""),
        extra={k: v for k, v in body.items() if k not in _KNOWN},
    )
