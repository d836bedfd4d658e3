"""Overlapping compactions: the archive maintenance lock and the conditional manifest write (moto S3)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from chalicelib.core.replay import archive_layout as layout
from chalicelib.store import archive as store
from spark_emr import compact, lock
from tests.spark.helpers import archive_view, list_keys, publish

pytestmark = pytest.mark.spark

TOPIC = "projects/proj/topics/orders"
HOUR_MS = 3_600_000
BASE_MS = 1_780_000_000_000 - 1_780_000_000_000 % HOUR_MS  # an hour start; every clock below is relative to it
NOW = BASE_MS / 1000 + 5 * 3600  # the runs' clock: five hours after the messages
LEASE = 600


def fill(s3: Any, bucket: str, objects: int, seed: int, offset_ms: int = 0) -> dict[str, bytes]:
    rng = random.Random(seed)
    expected: dict[str, bytes] = {}
    for i in range(objects):
        expected.update(publish(s3, bucket, TOPIC, BASE_MS + offset_ms + i * 60_000, 4, rng=rng)[1])
    return expected


def assert_exactly_once(s3: Any, bucket: str, expected: dict[str, bytes]) -> None:
    seen, bodies = archive_view(s3, bucket, TOPIC)
    assert set(seen.values()) == {1}
    assert bodies == expected


def test_a_run_overlapping_a_live_lease_is_refused(spark: Any, s3: Any, bucket: str) -> None:
    expected = fill(s3, bucket, 6, seed=1)
    refused: list[Exception] = []

    def second_run(phase: str) -> None:
        if phase != "written":
            return
        with pytest.raises(lock.LockHeld) as info:
            compact.compact(spark, bucket, min_age_seconds=0, now=NOW, lease_seconds=LEASE)
        refused.append(info.value)

    report = compact.compact(spark, bucket, min_age_seconds=0, now=NOW, lease_seconds=LEASE, on_phase=second_run)
    assert len(refused) == 1 and refused[0].args
    assert report["manifests_out"] == 1 and report["raw_objects_deleted"] == 6
    assert_exactly_once(s3, bucket, expected)
    assert lock.LOCK_KEY not in list_keys(s3, bucket)  # released


def test_a_stalled_holder_loses_its_lease_and_deletes_nothing(spark: Any, s3: Any, bucket: str) -> None:
    """Run A plans and writes, then stalls past its lease; run B takes the lock over, archives a raw object
    that arrived meanwhile and cleans up. Without the lock A would now overwrite B's manifest with one that
    does not cover that object and delete B's parts as stale: the late message would be lost."""
    expected = fill(s3, bucket, 6, seed=2)
    late: dict[str, bytes] = {}
    b_reports: list[dict[str, Any]] = []

    def stall_then_overlap(phase: str) -> None:
        if phase != "written":
            return
        late.update(publish(s3, bucket, TOPIC, BASE_MS + 30 * 60_000 + 7, 3, rng=random.Random(9))[1])
        b_reports.append(compact.compact(spark, bucket, min_age_seconds=0, now=NOW + LEASE + 1, lease_seconds=LEASE))

    with pytest.raises(lock.LockLost):
        compact.compact(spark, bucket, min_age_seconds=0, now=NOW, lease_seconds=LEASE, on_phase=stall_then_overlap)
    assert b_reports[0]["manifests_out"] == 1 and b_reports[0]["raw_objects_in"] == 7
    expected.update(late)
    assert len(late) == 3
    assert_exactly_once(s3, bucket, expected)
    assert not [k for k in list_keys(s3, bucket) if k.startswith("raw/")]
    manifest = store.read_manifest(s3, bucket, TOPIC, layout.hour_of_ms(BASE_MS))
    assert manifest is not None and len(manifest.raw_keys) == 7


def test_a_crashed_holder_is_taken_over_after_the_lease(spark: Any, s3: Any, bucket: str) -> None:
    expected = fill(s3, bucket, 5, seed=3)
    lock.acquire(s3, bucket, "compact", lambda: NOW, lease_seconds=LEASE, owner="crashed")  # never released
    with pytest.raises(lock.LockHeld) as info:
        compact.compact(spark, bucket, min_age_seconds=0, now=NOW + LEASE - 1, lease_seconds=LEASE)
    assert info.value.holder["owner"] == "crashed"
    assert len([k for k in list_keys(s3, bucket) if k.startswith("raw/")]) == 5  # nothing touched

    report = compact.compact(spark, bucket, min_age_seconds=0, now=NOW + LEASE + 1, lease_seconds=LEASE)
    assert report["raw_objects_deleted"] == 5
    assert_exactly_once(s3, bucket, expected)
    assert lock.LOCK_KEY not in list_keys(s3, bucket)


def test_a_manifest_is_replaced_only_over_the_version_planned_from(s3: Any, bucket: str) -> None:
    hour = layout.hour_of_ms(BASE_MS)
    first = layout.Manifest(topic=TOPIC, hour=hour, generation=1, digest="a", files=[], raw_keys=["r1"], created="c")
    assert store.put_manifest(s3, bucket, first, "")
    assert not store.put_manifest(s3, bucket, first, "")  # an hour without a manifest was planned: conflict
    got, etag = store.read_manifest_version(s3, bucket, TOPIC, hour)
    assert got == first and etag
    second = layout.Manifest(topic=TOPIC, hour=hour, generation=2, digest="b", files=[], raw_keys=["r1", "r2"],
                             created="c")
    assert store.put_manifest(s3, bucket, second, etag)
    assert not store.put_manifest(s3, bucket, first, etag)  # planned from a version replaced meanwhile
    assert store.read_manifest(s3, bucket, TOPIC, hour) == second


def test_a_lease_is_renewed_only_by_its_holder(s3: Any, bucket: str) -> None:
    clock = [NOW]
    held = lock.acquire(s3, bucket, "retention", lambda: clock[0], lease_seconds=LEASE)
    clock[0] += LEASE - 1
    held.renew()  # within the lease: extended
    clock[0] += LEASE - 1
    with pytest.raises(lock.LockHeld):
        lock.acquire(s3, bucket, "compact", lambda: clock[0], lease_seconds=LEASE)
    clock[0] += 2
    other = lock.acquire(s3, bucket, "compact", lambda: clock[0], lease_seconds=LEASE)
    with pytest.raises(lock.LockLost):
        held.renew()
    held.release()  # a lock taken over is left to its new holder
    assert lock.LOCK_KEY in list_keys(s3, bucket)
    other.release()
    assert lock.LOCK_KEY not in list_keys(s3, bucket)


def test_a_release_without_conditional_delete_ends_the_lease(s3: Any, bucket: str) -> None:
    from botocore.exceptions import ClientError

    class NoConditionalDelete:
        """S3 as seen through an endpoint that refuses DeleteObject with If-Match."""

        def __getattr__(self, name: str) -> Any:
            return getattr(s3, name)

        def delete_object(self, **kw: Any) -> None:
            raise ClientError({"Error": {"Code": "NotImplemented", "Message": "If-Match"}}, "DeleteObject")

    held = lock.acquire(NoConditionalDelete(), bucket, "compact", lambda: NOW, lease_seconds=LEASE)
    held.release()
    assert lock.LOCK_KEY in list_keys(s3, bucket)  # still there, but its lease has ended:
    lock.acquire(s3, bucket, "compact", lambda: NOW, lease_seconds=LEASE).release()  # taken at once
    assert lock.LOCK_KEY not in list_keys(s3, bucket)
