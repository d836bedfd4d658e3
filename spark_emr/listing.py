"""Listing the selection on the driver: topic prefixes, keys with sizes, and rounds of a few topics.

Requests kept in the messages table (inline-logged, spark_emr/log_items.py) join a topic's raw keys when the
job asks for them.

The jobs list with boto3 (ListObjectsV2 on threads, one topic per call); compaction takes the keys in
rounds (:func:`listing_rounds`) so that the driver holds one round's keys, not the whole night's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


# The keys of one topic's requests that have no raw object (inline-logged), given its raw and archive keys.
InlineKeys = Callable[[str, list[tuple[str, int]], list[tuple[str, int]]], list[tuple[str, int]]]


def listing_rounds(
    s3c: Any, bucket: str, project: str, topics: list[str], threads: int, round_keys: int,
    more_topics: list[str] | None = None, inline: InlineKeys | None = None,
) -> Iterator[Listing]:
    """The selection's raw and archive keys, ``threads`` topics listed at a time, in rounds of about
    ``round_keys`` keys: the driver holds one round's keys (a topic is never split), not the whole night's.
    ``more_topics`` are listed too (topics known to exist that may have nothing in S3 yet); ``inline`` adds
    each topic's inline-logged requests to its raw keys."""
    raw_topics = topic_prefixes(s3c, bucket, common.raw_prefixes(project, topics))
    arch_topics = topic_prefixes(s3c, bucket, common.archive_prefixes(project, topics))
    known = [layout.raw_topic_prefix(t) for t in more_topics or []]
    tails = sorted({p.split("/", 1)[1] for p in raw_topics + arch_topics + known})  # "p/t/"

    def one(tail: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        r = list(_keys(s3c, bucket, layout.RAW_PREFIX + tail))
        a = list(_keys(s3c, bucket, layout.ARCHIVE_PREFIX + tail))
        if inline is not None:
            r += inline(layout.topic_name(*tail.strip("/").split("/", 1)), r, a)
        return r, a

    raw: list[tuple[str, int]] = []
    arch: list[tuple[str, int]] = []
    for chunk in common.chunks(tails, max(1, threads)):
        found = common.threaded_map(one, chunk, threads)
        for r, a in found:
            raw.extend(r)
            arch.extend(a)
        if len(raw) + len(arch) >= round_keys:
            yield raw, arch
            raw, arch = [], []
    if raw or arch or not tails:
        yield raw, arch
