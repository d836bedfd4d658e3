"""Helpers of the Spark tests: writing raw objects the way the service does, listing keys."""

from __future__ import annotations

import io
import random
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import pyarrow.parquet as pq

from chalicelib.core import payload
from chalicelib.core.replay import archive_layout as layout


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


def archive_view(s3: Any, bucket: str, topic: str) -> tuple[Counter[str], dict[str, bytes]]:
    """What a reader that trusts manifests sees: each committed hour's files, plus raw objects no
    manifest covers. Returns (occurrences per id, bodies)."""
    seen: Counter[str] = Counter()
    bodies: dict[str, bytes] = {}
    keys = list_keys(s3, bucket)
    covered: set[str] = set()
    for key in keys:
        if key.endswith(layout.MANIFEST_NAME) and layout.parse_archive_key(key).topic == topic:
            m = layout.parse_manifest(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            covered.update(m.raw_keys)
            for f in m.files:
                table = pq.read_table(io.BytesIO(s3.get_object(Bucket=bucket, Key=f.key)["Body"].read()))
                assert table.num_rows == f.rows
                ids = table.column("message_id").to_pylist()
                pts = table.column("publish_time").to_pylist()
                assert list(zip(pts, ids)) == sorted(zip(pts, ids)), "rows sorted by publish time, id"
                for mid, data in zip(ids, table.column("data").to_pylist()):
                    seen[mid] += 1
                    bodies[mid] = data
    for key in keys:
        if key.startswith(layout.raw_topic_prefix(topic)) and key not in covered:
            _, msgs = payload.decode(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            for m in msgs:
                seen[m.message_id] += 1
                bodies[m.message_id] = m.data
    return seen, bodies


def snapshot(s3: Any, bucket: str) -> dict[str, str]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["ETag"]
    return out
