"""Seek and snapshot rules (core/replay/seek.py) and the parsing of their requests (api/snapshot_requests.py)."""

from __future__ import annotations

import pytest

from chalicelib.api.snapshot_requests import create_snapshot_request, seek_request, update_snapshot_request
from chalicelib.core import names
from chalicelib.core.errors import FailedPrecondition, InvalidArgument
from chalicelib.core.replay.seek import Restore, earliest_retained, key_bounds, replays_acked, snapshot_expiry
from chalicelib.core.wire.models import Subscription, Topic

NOW = 1_800_000_000.0
DAY = 86_400
SUB = names.make("p", "subscriptions", "sub-a")
SNAP = names.make("p", "snapshots", "snap-a")


def mid(epoch: float, index: int = 0) -> str:
    return f"{int(epoch * 1000):013d}123456{index:03d}"


def test_acked_messages_come_back_with_retain_acked_or_topic_retention() -> None:
    plain, retaining = Subscription(), Subscription(retain_acked_messages=True)
    keeping = Topic(message_retention_duration="86400s")
    assert not replays_acked(plain, Topic())
    assert replays_acked(retaining, Topic())
    assert replays_acked(plain, keeping)


def test_earliest_retained_time() -> None:
    created = NOW - 3 * DAY
    retaining = Subscription(retain_acked_messages=True, message_retention_duration="86400s")
    assert earliest_retained(retaining, Topic(), created, NOW) == NOW - DAY
    assert earliest_retained(Subscription(retain_acked_messages=True), Topic(), created, NOW) == created
    # the topic's retention reaches back before the subscription existed
    assert earliest_retained(Subscription(), Topic(message_retention_duration="864000s"), created, NOW) == \
        NOW - 10 * DAY


def test_restore_wants_later_messages_and_the_named_backlog() -> None:
    restore = Restore(int(NOW * 1000), frozenset({mid(NOW - 100)}))
    assert restore.wants(mid(NOW)) and restore.wants(mid(NOW + 1))
    assert restore.wants(mid(NOW - 100))
    assert not restore.wants(mid(NOW - 100, 1)) and not restore.wants(mid(NOW - 1))
    assert restore.scan_from_ms == int((NOW - 100) * 1000)
    assert Restore(int(NOW * 1000)).scan_from_ms == int(NOW * 1000)


def test_an_ordered_snapshot_holds_each_key_from_its_oldest_waiting_message() -> None:
    bounds = key_bounds([(mid(NOW - 50), "k"), (mid(NOW - 60), "k"), (mid(NOW - 70), ""), (mid(NOW - 10), "j")])
    assert bounds == {"k": int((NOW - 60) * 1000), "j": int((NOW - 10) * 1000)}
    restore = Restore(int(NOW * 1000), frozenset(), bounds)
    assert restore.wants(mid(NOW - 55), "k") and restore.wants(mid(NOW - 60, 2), "k")
    assert not restore.wants(mid(NOW - 61), "k") and not restore.wants(mid(NOW - 55), "j")
    assert not restore.wants(mid(NOW - 55)) and restore.scan_from_ms == int((NOW - 60) * 1000)


def test_snapshot_expiry_is_seven_days_less_the_oldest_backlog_age() -> None:
    assert snapshot_expiry(NOW, []) == NOW + 7 * DAY
    assert snapshot_expiry(NOW, [mid(NOW - 3 * DAY), mid(NOW - DAY)]) == pytest.approx(NOW + 4 * DAY)
    with pytest.raises(FailedPrecondition):
        snapshot_expiry(NOW, [mid(NOW - 7 * DAY + 1800)])


def test_seek_request_needs_exactly_one_target() -> None:
    assert seek_request({"time": "2026-01-01T00:00:00.5Z"}, SUB).time == pytest.approx(1767225600.5)
    assert seek_request({"snapshot": SNAP.path}, SUB).snapshot == SNAP
    assert seek_request({"snapshot": SNAP.path, "time": None, "subscription": SUB.path}, SUB).snapshot == SNAP
    bad_bodies: list[object] = [{}, {"time": "2026-01-01T00:00:00Z", "snapshot": SNAP.path}, {"time": "yesterday"},
                                {"snapshot": "projects/p/topics/t"}, {"bogus": 1}, [],
                                {"snapshot": SNAP.path, "subscription": {}}]  # found by make fuzz: was accepted
    for bad in bad_bodies:
        with pytest.raises(InvalidArgument):
            seek_request(bad, SUB)


def test_snapshot_requests() -> None:
    made = create_snapshot_request({"subscription": SUB.path, "labels": {"a": "b"}}, SNAP)
    assert (made.subscription, made.labels) == (SUB, {"a": "b"})
    # Another project's subscription parses: it is authorized first (api/references.py), then refused by the
    # use case (tests/functional/test_tenancy.py).
    assert create_snapshot_request({"subscription": "projects/other/subscriptions/sub-a"}, SNAP).subscription.project \
        == "other"
    for bad in ({}, {"subscription": SUB.path, "x": 1}):
        with pytest.raises(InvalidArgument):
            create_snapshot_request(bad, SNAP)
    patch = update_snapshot_request({"snapshot": {"labels": {"k": "v"}}, "updateMask": "labels"}, SNAP)
    assert (patch.update_mask, patch.snapshot.labels) == (("labels",), {"k": "v"})
    with pytest.raises(InvalidArgument):
        update_snapshot_request({"snapshot": {"topic": "x"}, "updateMask": "topic"}, SNAP)
