"""The archive maintenance lock: one S3 object taken with a conditional PUT and held for a lease.

Compaction and retention both rewrite the archive (manifests, part files) and delete raw objects, so
they take the same lock, ``locks/archive-maintenance.json`` in the data bucket:

* acquire: ``PUT If-None-Match: *`` (only when no lock object exists);
* a lock whose lease has run out (its holder crashed or stalled) is taken over with
  ``PUT If-Match: <the etag read>``, so of two runs taking over at once only one wins;
* renew (before every destructive phase): ``PUT If-Match: <our etag>``; it fails once another run
  has taken the lock over, and the job stops before committing or deleting anything
  (:class:`LockLost`);
* release: ``DELETE If-Match: <our etag>`` (a lock taken over meanwhile is left to its new holder);
  where S3 refuses a conditional DELETE, a conditional PUT of an ended lease.

Time comes from the injected ``clock`` (epoch seconds); the lease must outlast the longest phase
between two renewals (a whole Spark write stage), hence the default of three hours.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LOCK_KEY = "locks/archive-maintenance.json"
DEFAULT_LEASE_SECONDS = 3 * 3600
# S3 answers 412 when a condition fails and 409 when a conditional write races another one.
_CONFLICT_CODES = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")
_MISSING_CODES = ("NoSuchKey", "404", "NotFound")

Clock = Callable[[], float]


class LockHeld(RuntimeError):
    """Another run holds a live lease on the lock."""

    def __init__(self, holder: dict[str, Any]) -> None:
        super().__init__(f"archive maintenance lock held by {holder.get('owner')} ({holder.get('job')}) "
                         f"until {holder.get('expires_ms')} ms")
        self.holder = holder


class LockLost(RuntimeError):
    """Our lease ran out and another run took the lock over: stop before committing or deleting."""


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _conflict(exc: Exception) -> bool:
    return _code(exc) in _CONFLICT_CODES


@dataclass
class Lease:
    """A held lock: renew it before each destructive phase, release it at the end."""

    s3: Any
    bucket: str
    key: str
    owner: str
    job: str
    lease_ms: int
    clock: Clock
    etag: str = ""
    expires_ms: int = 0

    def body(self) -> bytes:
        now_ms = int(self.clock() * 1000)
        self.expires_ms = now_ms + self.lease_ms
        return json.dumps({"owner": self.owner, "job": self.job, "renewed_ms": now_ms,
                           "expires_ms": self.expires_ms}).encode()

    def put(self, **condition: str) -> None:
        resp = self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=self.body(),
                                  ContentType="application/json", **condition)
        self.etag = str(resp["ETag"])

    def renew(self) -> None:
        """Extend the lease; :class:`LockLost` when another run has taken the lock over."""
        try:
            self.put(IfMatch=self.etag)
        except Exception as exc:
            if _conflict(exc) or _code(exc) in _MISSING_CODES:
                raise LockLost(f"archive maintenance lock lost by {self.owner} ({self.job})") from exc
            raise

    def release(self) -> None:
        """Delete the lock if it is still ours; where a conditional DELETE is not supported, end the lease
        with a conditional PUT instead (the next run then takes the expired lock over)."""
        try:
            self.s3.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=self.etag)
        except Exception as exc:
            if _conflict(exc) or _code(exc) in _MISSING_CODES:
                return
            ended = json.dumps({"owner": self.owner, "job": self.job, "expires_ms": 0}).encode()
            try:
                self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=ended, IfMatch=self.etag)
            except Exception as again:
                if not (_conflict(again) or _code(again) in _MISSING_CODES):
                    raise


def _read(s3: Any, bucket: str, key: str) -> tuple[dict[str, Any], str] | None:
    try:
        obj = s3.get_object(Bucket=bucket, Key=key)
    except Exception as exc:
        if _code(exc) in _MISSING_CODES:
            return None
        raise
    try:
        holder = json.loads(obj["Body"].read())
    except ValueError:
        holder = {}  # unreadable: treated as expired
    return (holder if isinstance(holder, dict) else {}), str(obj["ETag"])


def acquire(
    s3: Any,
    bucket: str,
    job: str,
    clock: Clock,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    key: str = LOCK_KEY,
    owner: str = "",
) -> Lease:
    """Take the lock (or take over an expired lease); :class:`LockHeld` while another lease is live."""
    lease = Lease(s3, bucket, key, owner or uuid.uuid4().hex, job, lease_seconds * 1000, clock)
    for _ in range(3):  # the lock may be released or taken over between our read and our write
        try:
            lease.put(IfNoneMatch="*")
            return lease
        except Exception as exc:
            if not _conflict(exc):
                raise
        found = _read(s3, bucket, key)
        if found is None:
            continue
        holder, etag = found
        if int(holder.get("expires_ms", 0) or 0) > int(clock() * 1000):
            raise LockHeld(holder)
        try:
            lease.put(IfMatch=etag)
            return lease
        except Exception as exc:
            if not (_conflict(exc) or _code(exc) in _MISSING_CODES):
                raise
    found = _read(s3, bucket, key)
    raise LockHeld(found[0] if found else {"owner": "unknown"})
