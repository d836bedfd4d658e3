"""The work budget of schema checks: what one check (or one publish request's checks) may spend.

JSON Schema keywords spend from the budget in force (core/schemas/json_keywords.py); when it runs out the check
stops with :class:`OverBudget`, which the checker turns into a refused message. A publish opens one budget for
all its messages and the revisions they are tried against (core/schemas/compiled.conforming); a check made with
no budget open gets one of its own. Avro and Protocol Buffer checks are one pass over the message and spend
nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from chalicelib.core.schemas.limits import CHECK_BASE_UNITS, CHECK_MAX_UNITS, CHECK_UNITS_PER_BYTE


class OverBudget(Exception):
    """A check needed more work than its budget allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"checking needs more than {limit} units of work")
        self.limit = limit


class Budget:
    """What is left of a budget of ``limit`` units."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def spend(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise OverBudget(self.limit)

    @property
    def spent(self) -> int:
        return self.limit - self.left


_CURRENT: ContextVar[Budget | None] = ContextVar("metro_schema_budget", default=None)


def allowance(message_bytes: int) -> int:
    """The units a check of ``message_bytes`` bytes of messages may spend."""
    return min(CHECK_MAX_UNITS, CHECK_BASE_UNITS + CHECK_UNITS_PER_BYTE * message_bytes)


def current() -> Budget | None:
    return _CURRENT.get()


@contextmanager
def opened(limit: int) -> Iterator[Budget]:
    """A budget of ``limit`` units in force for the checks made inside the block."""
    budget = Budget(limit)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


@contextmanager
def ensured(message_bytes: int) -> Iterator[Budget]:
    """The budget in force, or one of ``allowance(message_bytes)`` units for the block when none is."""
    budget = _CURRENT.get()
    if budget is not None:
        yield budget
        return
    with opened(allowance(message_bytes)) as fresh:
        yield fresh


def spend(units: int) -> None:
    """Spend from the budget in force (nothing happens when none is)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.spend(units)
