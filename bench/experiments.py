"""Proposed changes, tried in the benchmark process only (``python -m bench.run --patch NAME,...``).

Each patch monkeypatches one class of chalicelib for this process, so a proposal can be measured on
the same harness before anyone edits the real module. None is applied unless asked for; the results
JSON records which were. Proposals that were adopted (fuller pulls, concurrent fan-out sends, the
metadata cache, direct fan-out at publish, the pump's shard listing, no per-pull lease item) are part
of Metro now and left this list; their before/after figures are in docs/decisions/cost-model.md and
docs/decisions/lease-item.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PATCHES: dict[str, Callable[[Any], None]] = {}


def patch(name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        PATCHES[name] = fn
        return fn

    return register


def apply(names: list[str], stack: Any) -> list[str]:
    unknown = [n for n in names if n not in PATCHES]
    if unknown:
        raise SystemExit(f"unknown patch(es) {unknown}; known: {sorted(PATCHES)}")
    for n in names:
        PATCHES[n](stack)
    return names

