"""Listing the selection on the driver: topic prefixes, keys with sizes, and rounds of a few topics.

The jobs list with boto3 (ListObjectsV2 on threads, one topic per call); compaction takes the keys in
rounds (:func:`listing_rounds`) so that the driver holds one round's keys, not the whole night's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chalicelib.core.replay import archive_layout as layout
from spark_emr import common

Listing = tuple[list[tuple[str, int]], list[tuple[str, int]]]  # (raw keys, archive keys) with sizes


def topic_prefixes(s3c: Any, bucket: str, prefixes: list[str]) -> list[str]:
    """Broad prefixes (``raw/``, ``raw/p/``) expanded to one prefix per topic (``raw/p/t/``)."""
    out: list[str] = []
    for prefix in prefixes:
        if prefix.count("/") >= 3:  # raw/p/t/ : already a topic
            out.append(prefix)
            continue
        level = [prefix]
        while level and level[0].count("/") < 3:
            level = [q for p in level for q in common.list_prefixes(s3c, bucket, p)]
        out.extend(level)
    return out


def list_selection(s3c: Any, bucket: str, prefixes: list[str], threads: int) -> list[tuple[str, int]]:
    """All (key, size) under ``prefixes``; broad prefixes are split per topic and listed on threads."""
    found = common.threaded_map(lambda p: list(_keys(s3c, bucket, p)), topic_prefixes(s3c, bucket, prefixes), threads)
    return [k for keys in found for k in keys]


def _keys(s3c: Any, bucket: str, prefix: str) -> Iterator[tuple[str, int]]:
    for o in common.list_objects(s3c, bucket, prefix):
        yield o["Key"], int(o["Size"])


def listing_rounds(
    s3c: Any, bucket: str, project: str, topics: list[str], threads: int, round_keys: int
) -> Iterator[Listing]:
    """The selection's raw and archive keys, ``threads`` topics listed at a time, in rounds of about
    ``round_keys`` keys: the driver holds one round's keys (a topic is never split), not the whole night's."""
    raw_topics = topic_prefixes(s3c, bucket, common.raw_prefixes(project, topics))
    arch_topics = topic_prefixes(s3c, bucket, common.archive_prefixes(project, topics))
    tails = sorted({p.split("/", 1)[1] for p in raw_topics + arch_topics})  # "p/t/"
    raw: list[tuple[str, int]] = []
    arch: list[tuple[str, int]] = []
    for chunk in common.chunks(tails, max(1, threads)):
        found = common.threaded_map(
            lambda tail: (list(_keys(s3c, bucket, layout.RAW_PREFIX + tail)),
                          list(_keys(s3c, bucket, layout.ARCHIVE_PREFIX + tail))),
            chunk, threads)
        for r, a in found:
            raw.extend(r)
            arch.extend(a)
        if len(raw) + len(arch) >= round_keys:
            yield raw, arch
            raw, arch = [], []
    if raw or arch or not tails:
        yield raw, arch
