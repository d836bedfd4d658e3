"""Pure planning on the driver: which hours to compact / expire, from key listings and manifests.

Inputs are plain lists (S3 listings) and parsed manifests, outputs are plain data: unit-tested
without S3 or Spark.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from chalicelib.core.replay import archive_layout as layout

HourId = tuple[str, int]  # (topic, hour start in epoch ms)
T = TypeVar("T", bound=tuple[object, ...])


def hour_id(topic: str, hour: datetime) -> HourId:
    return topic, layout.hour_ms(hour)


@dataclass
class HourListing:
    """What one listing found for a topic hour."""

    topic: str
    hour: datetime
    raw: dict[str, int] = field(default_factory=dict)  # raw key -> size
    archive: dict[str, int] = field(default_factory=dict)  # archive key -> size

    @property
    def has_manifest(self) -> bool:
        return layout.manifest_key(self.topic, self.hour) in self.archive

    def part_digests(self) -> set[str]:
        out = set()
        for key in self.archive:
            name = key.rsplit("/", 1)[-1]
            if name.startswith("part-") and name.endswith(".parquet"):
                out.add(name[len("part-") :].rsplit("-", 1)[0])
        return out


def group_listing(raw: Iterable[tuple[str, int]], archive: Iterable[tuple[str, int]]) -> dict[HourId, HourListing]:
    """Group raw and archive keys (with sizes) by topic hour; keys that fit neither layout are ignored."""
    hours: dict[HourId, HourListing] = {}
    for key, size in raw:
        try:
            rk = layout.parse_raw_key(key)
        except ValueError:
            continue
        hid = hour_id(rk.topic, rk.hour)
        hours.setdefault(hid, HourListing(rk.topic, rk.hour)).raw[key] = size
    for key, size in archive:
        try:
            ak = layout.parse_archive_key(key)
        except ValueError:
            continue
        hid = hour_id(ak.topic, ak.hour)
        hours.setdefault(hid, HourListing(ak.topic, ak.hour)).archive[key] = size
    return hours


def needs_manifest(h: HourListing) -> bool:
    """Hours compaction must look at: raw objects present, or archive leftovers of an interrupted run."""
    if h.raw:
        return True
    if not h.archive:
        return False
    if not h.has_manifest:
        return True  # parts without a manifest: an interrupted first run
    return len(h.part_digests()) > 1  # parts of two generations: an interrupted cleanup


@dataclass
class HourPlan:
    topic: str
    hour: datetime
    old: layout.Manifest | None
    new_raw: list[str]  # raw keys to archive now (not covered by the old manifest)
    covered_raw: list[str]  # raw keys already covered by the old manifest (delete only)
    archive_listing: list[str]
    digest: str = ""
    generation: int = 0

    @property
    def old_files(self) -> list[str]:
        return [f.key for f in self.old.files] if self.old else []

    @property
    def work(self) -> bool:
        return bool(self.new_raw)


def plan_compaction(
    hours: Mapping[HourId, HourListing],
    manifests: Mapping[HourId, layout.Manifest | None],
    now_ms: int,
    min_age_ms: int,
) -> list[HourPlan]:
    """One plan per hour that needs work (new raw objects old enough) or cleanup."""
    cutoff = now_ms - min_age_ms
    plans = []
    for hid, h in sorted(hours.items()):
        if not needs_manifest(h):
            continue
        old = manifests.get(hid)
        covered = set(old.raw_keys) if old else set()
        new_raw, covered_raw = [], []
        for key in sorted(h.raw):
            if key in covered:
                covered_raw.append(key)
            elif layout.parse_raw_key(key).publish_ms <= cutoff:
                new_raw.append(key)
        p = HourPlan(h.topic, h.hour, old, new_raw, covered_raw, sorted(h.archive))
        if new_raw:
            p.digest = layout.input_digest(covered | set(new_raw))
            p.generation = (old.generation if old else 0) + 1
        if new_raw or covered_raw or stale_keys(p, old):
            plans.append(p)
    return plans


def stale_keys(p: HourPlan, current: layout.Manifest | None) -> list[str]:
    """Archive keys of the hour that the committed manifest does not name (safe to delete after commit)."""
    keep = current.file_keys() if current else set()
    keep.add(layout.manifest_key(p.topic, p.hour))
    stale = {k for k in p.archive_listing if k not in keep}
    if p.old is not None and current is not None and current is not p.old:
        stale |= {k for k in p.old.file_keys() if k not in keep}
    if current is None:
        return []  # nothing committed: leave every file alone
    return sorted(stale)


def build_manifest(p: HourPlan, files: list[layout.ManifestFile], created: str) -> layout.Manifest:
    covered = set(p.old.raw_keys) if p.old else set()
    covered |= set(p.new_raw)
    return layout.Manifest(
        topic=p.topic,
        hour=p.hour,
        generation=p.generation,
        digest=p.digest,
        files=sorted(files, key=lambda f: f.key),
        raw_keys=sorted(covered),
        created=created,
    )


def task_groups(plans: list[HourPlan], keys_per_group: int) -> list[list[str]]:
    """Units of work for the fetch stage: raw keys in chunks (an hour's keys stay together when
    they fit one chunk), plus one unit per old archive file to merge."""
    groups: list[list[str]] = []
    current: list[str] = []
    for p in plans:
        if not p.work:
            continue
        for key in p.new_raw:
            current.append(key)
            if len(current) >= keys_per_group:
                groups.append(current)
                current = []
        for key in p.old_files:
            groups.append([key])
    if current:
        groups.append(current)
    return groups


def hour_input_bytes(p: HourPlan, listing: HourListing) -> int:
    """Bytes a compaction of the hour reads: its new raw objects plus the old generation's files."""
    return sum(listing.raw.get(k, 0) for k in p.new_raw) + (p.old.size if p.old else 0)


def split_direct(
    plans: list[HourPlan], sizes: Mapping[HourId, int], direct_bytes: int, parallelism: int
) -> tuple[list[list[HourPlan]], list[HourPlan]]:
    """Hours whose input fits ``direct_bytes`` are packed into units that one task fetches, merges and
    writes with no shuffle (about two units per core, in hour order); bigger hours are returned apart,
    for the fetch -> shuffle -> write path that spreads one hour's reads over many tasks."""
    work = [p for p in plans if p.work]
    small = [p for p in work if sizes[hour_id(p.topic, p.hour)] <= direct_bytes]
    big = [p for p in work if sizes[hour_id(p.topic, p.hour)] > direct_bytes]
    total = sum(sizes[hour_id(p.topic, p.hour)] for p in small)
    target = max(1, min(direct_bytes, -(-total // max(1, parallelism * 2))))
    units: list[list[HourPlan]] = []
    current: list[HourPlan] = []
    acc = 0
    for p in small:
        size = sizes[hour_id(p.topic, p.hour)]
        if current and acc + size > target:
            units.append(current)
            current, acc = [], 0
        current.append(p)
        acc += size
    if current:
        units.append(current)
    return units, big


MAX_TIME_SLICES = 60  # an hour is cut into at most one slice per minute


def hour_time_slices(plans: list[HourPlan], sizes: Mapping[HourId, int], slice_bytes: int) -> dict[HourId, int]:
    """How many publish-time slices each hour is written in: one per ``slice_bytes`` of input, so a big
    hour is merged, sorted and written by several tasks instead of one."""
    out = {}
    for p in plans:
        hid = hour_id(p.topic, p.hour)
        out[hid] = max(1, min(MAX_TIME_SLICES, -(-sizes[hid] // max(1, slice_bytes))))
    return out


def hour_slots(hours: list[T], partitions: int) -> dict[T, int]:
    """Output partition of each hour (or hour slice) being written: round-robin over the sorted keys, so
    the assignment is deterministic and balanced (no reliance on Python's string hash)."""
    return {hid: i % max(1, partitions) for i, hid in enumerate(sorted(hours))}


# --- retention --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetentionSettings:
    """What the resources table says about how long a topic's messages may still be needed.

    ``topics``: each topic's own messageRetentionDuration in seconds (0 when unset);
    ``subscriptions``: per topic, the longest messageRetentionDuration of its subscriptions (an unacked
    message may be delivered, and an acked one sought back to, that long after its publication);
    ``longest``: the longest of any subscription, for topics no longer in the table (their detached
    subscriptions may still hold a backlog). ``known`` is False when no table was read: the command
    line then decides alone.
    """

    topics: Mapping[str, int] = field(default_factory=dict)
    subscriptions: Mapping[str, int] = field(default_factory=dict)
    longest: int = 0
    known: bool = False

    def floor(self, topic: str) -> int:
        """Seconds a topic's messages must be kept: nothing may be deleted any earlier."""
        if not self.known:
            return 0
        if topic not in self.topics:
            return self.longest
        return max(self.topics[topic], self.subscriptions.get(topic, 0))


NO_SETTINGS = RetentionSettings()


def retention_for(
    topic: str, default_seconds: int, overrides: Mapping[str, int], settings: RetentionSettings = NO_SETTINGS
) -> int:
    """A topic's retention: per-topic override, else per-project (``projects/p``), else what the topic's and
    its subscriptions' settings need, else the default; never less than the settings need (an override
    can shorten retention only down to that floor)."""
    floor = settings.floor(topic)
    project = "/".join(topic.split("/")[:2])
    if topic in overrides:
        wanted = int(overrides[topic])
    elif project in overrides:
        wanted = int(overrides[project])
    else:
        wanted = floor or default_seconds
    return max(wanted, floor)


def expired_hours(
    hours: Mapping[HourId, HourListing],
    now_ms: int,
    default_seconds: int,
    overrides: Mapping[str, int],
    settings: RetentionSettings = NO_SETTINGS,
) -> list[HourListing]:
    """Hours whose every message is older than the topic's retention (the hour's end has passed it)."""
    out = []
    for (topic, start), h in sorted(hours.items()):
        keep_ms = retention_for(topic, default_seconds, overrides, settings) * 1000
        if start + layout.HOUR_MS <= now_ms - keep_ms:
            out.append(h)
    return out


def summarize(rows: Iterable[Mapping[str, int | str]], keys: tuple[str, ...]) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for r in rows:
        for k in keys:
            total[k] += int(r.get(k, 0) or 0)
    return dict(total)
