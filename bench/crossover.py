"""The crossover: the message size from which Metro's AWS bill is below Google Pub/Sub's for the same traffic.

Google bills bytes (bench/pricing.py: $40 per TiB published plus delivered, a message's data and some
overhead); Metro bills requests, most of them whatever the size. So Google is the cheaper at small sizes
and Metro from some size on. The benchmark runs scenario A's workload (one subscription, publish requests of
100, pulls of 100) at a few sizes beside A itself (1 KiB), prices each run both ways, and this module reads the
crossover off those measured points: the smallest size from which every measured point has Metro at or below
Google, interpolated linearly between the last point where Metro costs more and the first where it does not.
Nothing is extrapolated: a crossover above the largest measured size is reported as not reached (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KIB = 1024
BASE_KEY = "A"  # the 1 KiB point: scenario A itself
SIZES_KIB_FULL = (2, 4, 8)  # the extra sizes of a full run
SIZES_KIB_QUICK = (4,)  # a quick run measures only the size the target names


def key(size_kib: int) -> str:
    """The scenario key of A's workload at ``size_kib``."""
    return f"A-{size_kib}k"


def sizes_kib(quick: bool) -> tuple[int, ...]:
    return SIZES_KIB_QUICK if quick else SIZES_KIB_FULL


@dataclass(frozen=True)
class Point:
    size_kib: float
    metro_usd: float  # per million messages
    google_usd: float  # per million messages

    @property
    def metro_cheaper(self) -> bool:
        return self.metro_usd <= self.google_usd


def points(results: Mapping[str, Mapping[str, Any]]) -> list[Point]:
    """The measured points (complete runs only), smallest size first: A and A's workload at the extra sizes."""
    keys = [BASE_KEY, *(key(s) for s in SIZES_KIB_FULL + SIZES_KIB_QUICK)]
    found: dict[float, Point] = {}
    for k in keys:
        r = results.get(k)
        if r is None or not r.get("complete") or not r.get("google"):
            continue
        size = r["message_bytes"] / KIB
        found[size] = Point(size, r["cost"]["usd_per_million"], r["google"]["usd_per_million"])
    return [found[s] for s in sorted(found)]


def crossover_kib(measured: Sequence[Point]) -> float | None:
    """The size (KiB) from which Metro costs at most Google's on every measured point; None when the largest
    measured size is still cheaper on Google (or nothing was measured)."""
    first = len(measured)
    while first > 0 and measured[first - 1].metro_cheaper:
        first -= 1
    if first == len(measured):
        return None
    if first == 0:
        return measured[0].size_kib  # at or below the smallest measured size
    lo, hi = measured[first - 1], measured[first]
    d_lo, d_hi = lo.metro_usd - lo.google_usd, hi.metro_usd - hi.google_usd  # > 0, <= 0
    return lo.size_kib + (hi.size_kib - lo.size_kib) * d_lo / (d_lo - d_hi)


def summary(results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What the results JSON keeps under ``crossover``: the points and the size read off them."""
    measured = points(results)
    size = crossover_kib(measured)
    return {"crossover_kib": None if size is None else round(size, 2),
            "below_smallest": bool(measured) and size == measured[0].size_kib and measured[0].metro_cheaper,
            "points": [{"size_kib": p.size_kib, "metro_usd_per_million": p.metro_usd,
                        "google_usd_per_million": p.google_usd} for p in measured]}
