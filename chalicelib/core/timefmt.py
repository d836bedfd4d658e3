"""Durations (``"600s"``, ``"1.5s"``) and RFC 3339 timestamps as protobuf JSON writes them."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from chalicelib.core.errors import InvalidArgument

_DURATION = re.compile(r"^(-?\d+)(?:\.(\d{1,9}))?s\Z")
_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})\Z")


def parse_duration(text: object, field: str) -> float:
    """Seconds from a protobuf JSON duration."""
    if not isinstance(text, str) or not (m := _DURATION.match(text)):
        raise InvalidArgument(f"Invalid duration for {field}: {text!r} (expected e.g. \"600s\")")
    seconds = int(m.group(1))
    frac = m.group(2) or ""
    value = abs(seconds) + (int(frac) / 10 ** len(frac) if frac else 0.0)
    return -value if m.group(1).startswith("-") else value


def format_duration(seconds: float) -> str:
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds:.9f}".rstrip("0") + "s"


def parse_timestamp(text: object, field: str) -> float:
    """Epoch seconds (float) from an RFC 3339 timestamp; nanoseconds accepted (rounded to µs)."""
    if not isinstance(text, str) or not (m := _TIMESTAMP.match(text)):
        raise InvalidArgument(f"Invalid timestamp for {field}: {text!r} (expected RFC 3339)")
    date, clock, frac, zone = m.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        base = datetime.fromisoformat(f"{date}T{clock}{zone}")
    except ValueError as exc:
        raise InvalidArgument(f"Invalid timestamp for {field}: {text!r}") from exc
    return base.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


def format_timestamp(epoch: float) -> str:
    """RFC 3339 UTC with millisecond precision, as Google's services print publish times."""
    dt = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def format_timestamp_us(epoch: float) -> str:
    dt = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
