"""chalicelib.store.archive.read_archived_bodies against an in-memory fake S3 client (no Spark)."""

from __future__ import annotations

import io
from datetime import datetime, timezone
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.core import payload
from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store
from spark_emr import records

TOPIC = "projects/p/topics/t"
HOUR = datetime(2026, 11, 22, 4, tzinfo=timezone.utc)
H0 = int(HOUR.timestamp() * 1000)


class FakeS3:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.gets: list[str] = []
        self.on_get: Any = None

    def put_object(self, Bucket: str, Key: str, Body: bytes, **_: Any) -> None:
        self.objects[Key] = Body

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self.gets.append(Key)
        if self.on_get is not None:
            self.on_get(Key)
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "gone"}}, "GetObject")
        return {"Body": io.BytesIO(self.objects[Key])}


def archive_hour(s3: FakeS3, start_ms: int, n_objects: int, digest: str, part_rows: int) -> dict[str, bytes]:
    bodies: dict[str, bytes] = {}
    items = []
    for i in range(n_objects):
        rid = f"{start_ms + i * 1000:013d}{i:06d}"
        msgs = [payload.StoredMessage(f"{rid}{j:03d}", f"{rid}-{j}".encode(), {"j": str(j)}, "ok") for j in range(3)]
        pt = layout.format_time(datetime.fromtimestamp((start_ms + i * 1000) / 1000, tz=timezone.utc))
        blob, _ = payload.encode(TOPIC, rid, pt, msgs)
        key = payload.raw_key(TOPIC, rid, pt)
        items.append((key, blob))
        bodies.update({m.message_id: m.data for m in msgs})
    ((hid, table),) = records.raw_tables(items).items()
    hour = layout.hour_of_ms(hid[1])
    parts = records.split_parts(records.merge_tables([table]), TOPIC, hour, digest, 10**9, part_rows)
    for p in parts:
        s3.put_object(Bucket="b", Key=p.key, Body=p.body)
    manifest = layout.Manifest(TOPIC, hour, 1, digest, [p.info for p in parts], [k for k, _ in items])
    s3.put_object(Bucket="b", Key=layout.manifest_key(TOPIC, hour), Body=layout.serialize_manifest(manifest))
    return bodies


def test_reads_only_the_manifests_and_files_needed() -> None:
    s3 = FakeS3()
    bodies = archive_hour(s3, H0, 10, "d1", part_rows=6)  # 30 messages in 5 files
    bodies2 = archive_hour(s3, H0 + 3_600_000, 2, "d2", part_rows=100)
    wanted = [sorted(bodies)[7], sorted(bodies2)[1], f"{H0 - 3_600_000:013d}000000000"]
    found = store.read_archived_bodies(s3, "b", TOPIC, wanted)
    assert set(found) == set(wanted[:2])
    assert found[wanted[0]] == (bodies[wanted[0]], {"j": wanted[0][-1]}, "ok")
    parts_read = [k for k in s3.gets if k.endswith(".parquet")]
    assert len(parts_read) == 2  # one file of each hour
    assert sum(k.endswith(layout.MANIFEST_NAME) for k in s3.gets) == 3  # two hours + one without a manifest


def test_rereads_the_manifest_when_a_file_was_superseded() -> None:
    s3 = FakeS3()
    bodies = archive_hour(s3, H0, 4, "old", part_rows=100)
    old_part = layout.part_key(TOPIC, HOUR, "old", 0)

    def supersede(key: str) -> None:
        if key == old_part:  # a compaction committed a new generation and deleted the old file
            s3.on_get = None
            archive_hour(s3, H0, 4, "new", part_rows=100)
            del s3.objects[old_part]

    s3.on_get = supersede
    mid = sorted(bodies)[0]
    assert store.read_archived_bodies(s3, "b", TOPIC, [mid])[mid][0] == bodies[mid]
    assert s3.gets.count(layout.manifest_key(TOPIC, HOUR)) == 2
