"""Per-minute figures of a long run, pure: latencies, errors and counts in one-minute buckets."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench.workload import percentile


@dataclass
class Minute:
    latencies: list[float] = field(default_factory=list)  # seconds, publish sent -> delivered
    publish_seconds: list[float] = field(default_factory=list)  # publish request round trips
    published: int = 0
    delivered: int = 0
    errors: int = 0


@dataclass
class Timeline:
    """Events stamped with seconds since the run's start, bucketed by minute. Not thread-safe."""

    minutes: dict[int, Minute] = field(default_factory=lambda: defaultdict(Minute))
    error_kinds: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def _at(self, t: float) -> Minute:
        return self.minutes[int(t // 60)]

    def published(self, t: float, count: int, seconds: float) -> None:
        minute = self._at(t)
        minute.published += count
        minute.publish_seconds.append(seconds)

    def delivered(self, t: float, latency: float) -> None:
        minute = self._at(t)
        minute.delivered += 1
        minute.latencies.append(latency)

    def error(self, t: float, kind: str) -> None:
        self._at(t).errors += 1
        self.error_kinds[kind] += 1

    def rows(self) -> list[dict[str, Any]]:
        """One row per minute: counts, errors, end-to-end latency p50/p95/p99 and publish p50/p99 (ms)."""
        out = []
        for index in sorted(self.minutes):
            m = self.minutes[index]
            out.append({
                "minute": index, "published": m.published, "delivered": m.delivered, "errors": m.errors,
                **{f"latency_p{q}_ms": round(percentile(m.latencies, q) * 1000, 1) for q in (50, 95, 99)},
                **{f"publish_p{q}_ms": round(percentile(m.publish_seconds, q) * 1000, 1) for q in (50, 99)},
            })
        return out
