"""Pure shaping of job outputs: the ARGO-style metrics summary and the daily metrics table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa

from chalicelib.core import usage

DAILY_SCHEMA = pa.schema(
    [
        pa.field("project", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("day", pa.date32()),
        pa.field("messages", pa.int64()),
        pa.field("bytes", pa.int64()),
    ]
)


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def summary(project: str, rows: Iterable[Mapping[str, Any]], generated: datetime | None = None) -> dict[str, Any]:
    """ARGO Messaging Service style metrics of one project from daily rows
    ``{"topic": "projects/p/topics/t", "day": date, "messages": n, "bytes": n}``: the document the
    API serves (see ``chalicelib/core/usage.py``)."""
    rows = [{**r, "day": _day(r["day"])} for r in rows]
    return usage.build_summary(project, rows, generated or datetime.now(timezone.utc))


def daily_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    rows = list(rows)
    return pa.Table.from_pydict(
        {
            "project": [r["project"] for r in rows],
            "topic": [r["topic"] for r in rows],
            "day": [_day(r["day"]) for r in rows],
            "messages": [int(r["messages"]) for r in rows],
            "bytes": [int(r["bytes"]) for r in rows],
        },
        schema=DAILY_SCHEMA,
    )


def daily_key(project: str, d: date) -> str:
    return f"metrics/daily/{project}/{d.year:04d}/{d.month:02d}/{d.day:02d}.parquet"


def summary_key(project: str) -> str:
    return usage.summary_key(project)
