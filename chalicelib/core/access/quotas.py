"""Per-project quotas: the pure check (the counts come from the stores)."""

from __future__ import annotations

from chalicelib.core.errors import ResourceExhausted


def check(kind: str, used: int, limit: int) -> None:
    """Refuse one more ``kind`` when ``used`` already reaches ``limit`` (0: no limit)."""
    if limit and used >= limit:
        raise ResourceExhausted(f"Your project has exceeded a limit: (type=\"{kind}\", current={used}, "
                                f"maximum={limit}).")
