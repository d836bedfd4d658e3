"""AMS's subscription offsets on Metro's model (pure).

An AMS offset is a position in a topic's message log. Metro's log is ordered by publish time (message ids
begin with their publish time in milliseconds), so **a Metro offset is a publish time in epoch
milliseconds**: the offset of a message is its publish time, and moving a subscription's offset to ``o``
is a seek to time ``o`` (every retained message published at or after ``o`` is delivered again, every
earlier one counts as acknowledged).

- ``min``: the oldest position the subscription can move to (the start of its retention window);
- ``max``: the position after the newest message of the topic (its publish time + 1), ``min`` when the
  topic holds no message;
- ``current``: ``max`` when nothing is waiting; otherwise the position the subscription was last moved to
  (or its creation, or ``min``, whichever is later): no unacknowledged message is older than it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.timefmt import parse_timestamp


@dataclass(frozen=True)
class Offsets:
    min: int
    max: int
    current: int

    def to_wire(self) -> dict[str, Any]:
        return {"max": self.max, "min": self.min, "current": self.current}


@dataclass(frozen=True)
class OffsetAnswer:
    offset: int

    def to_wire(self) -> dict[str, Any]:
        return {"offset": self.offset}


def offsets(floor_ms: int, newest_ms: int | None, moved_ms: int, created_ms: int, waiting: int) -> Offsets:
    """The subscription's offsets (see the module's docstring)."""
    top = max(floor_ms, newest_ms + 1) if newest_ms is not None else floor_ms
    current = top if waiting == 0 else min(top, max(floor_ms, moved_ms, created_ms))
    return Offsets(floor_ms, top, current)


def check_offset(offset: int, bounds: Offsets) -> int:
    """An offset the subscription may move to: within [min, max]."""
    if not bounds.min <= offset <= bounds.max:
        raise InvalidArgument(f"Offset out of bounds: {offset} (min {bounds.min}, max {bounds.max})")
    return offset


def offset_value(raw: Any) -> int:
    """``{"offset": n}``'s n: an integer, or its decimal string (AMS clients send either)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise InvalidArgument("Invalid offset: must be an integer")
    try:
        return int(raw)
    except ValueError:
        raise InvalidArgument(f"Invalid offset: {str(raw)[:40]!r}") from None


def time_ms(text: str) -> int:
    """``?time=`` as AMS clients send it (``2019-09-02T13:39:11.100Z``, or with a space for the ``T``)."""
    if not text:
        raise InvalidArgument("The time parameter is required (e.g. 2019-09-02T13:39:11.100Z)")
    return round(parse_timestamp(text.strip().replace(" ", "T", 1), "time") * 1000)
