"""Helpers of the Spark tests: writing raw objects the way the service does, listing keys."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from typing import Any

from chalicelib.core import payload


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def publish(
    s3: Any,
    bucket: str,
    topic: str,
    ms: int,
    count: int,
    size: int = 100,
    rng: random.Random | None = None,
    ordering_key: str = "",
    attributes: dict[str, str] | None = None,
) -> tuple[str, dict[str, bytes]]:
    """Write one raw object of ``count`` messages published at ``ms``; return its key and bodies."""
    rng = rng or random.Random(ms)
    request_id = f"{ms:013d}{rng.randrange(1_000_000):06d}"
    bodies = {f"{request_id}{i:03d}": rng.randbytes(size) for i in range(count)}
    msgs = [
        payload.StoredMessage(mid, data, dict(attributes or {"i": mid[-3:]}), ordering_key)
        for mid, data in bodies.items()
    ]
    pt = iso(ms)
    blob, _ = payload.encode(topic, request_id, pt, msgs)
    key = payload.raw_key(topic, request_id, pt)
    s3.put_object(Bucket=bucket, Key=key, Body=blob)
    return key, bodies


def list_keys(s3: Any, bucket: str, prefix: str = "") -> list[str]:
    out: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.extend(o["Key"] for o in page.get("Contents", []))
    return out
