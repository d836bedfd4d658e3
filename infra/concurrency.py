"""How much of the account's Lambda concurrency a stage reserves, decided before deploying.

Lambda keeps at least 100 executions of an account unreserved, and new accounts often start with a limit of 10,
where no function may reserve any. A stage asks for two reservations:

* ``maintenance``: 1, so that two scheduled runs never overlap;
* ``push``: the cap on every push delivery at once. Each push subscription's mapping already has a
  ``MaximumConcurrency`` of its own (chalicelib/store/mappings.py); this caps their sum, so that a push flood
  cannot take the concurrency the API's calls need.

What is left unreserved must stay at least half the account's limit (and at least Lambda's 100): that is the API's
headroom, which long pulls use most. A push cap that does not fit is lowered to fit; when nothing fits, nothing is
reserved, and the plan says what that means. Pure: the deploy reads the account's settings and the stage's current
reservations and prints the plan's notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

LAMBDA_MIN_UNRESERVED = 100  # Lambda refuses a reservation that leaves the account less than this
API_SHARE = 0.5  # of the account's limit left unreserved for the API (and every other function)
PUSH_MIN = 2  # below this a push cap would serialize every push subscription


@dataclass(frozen=True)
class Account:
    limit: int  # AccountLimit.ConcurrentExecutions
    unreserved: int  # AccountLimit.UnreservedConcurrentExecutions (after every reservation, this stage's included)


@dataclass(frozen=True)
class Plan:
    reservations: dict[str, int]
    notes: list[str] = field(default_factory=list)


def plan(account: Account, current: Mapping[str, int], push_cap: int) -> Plan:
    """The reservations to deploy, given the account, the stage's reservations today (by Chalice function name)
    and the push cap asked for."""
    pool = account.unreserved + sum(current.values())  # what this stage may reserve from
    keep = max(LAMBDA_MIN_UNRESERVED, int(account.limit * API_SHARE))
    room = pool - keep
    if room < 1 + PUSH_MIN:
        return Plan({}, [
            f"the account's Lambda concurrency limit is {account.limit} ({pool} not reserved by others): no "
            f"function is reserved any. Two maintenance runs may overlap (their work is idempotent), and push "
            f"deliveries are capped only per subscription, so a push flood can throttle the API. Ask for a "
            f"higher limit (Service Quotas, 'Concurrent executions') and deploy again."])
    push = min(push_cap, room - 1)
    notes = [] if push == push_cap else [
        f"push concurrency capped at {push}, not {push_cap}: the account's limit is {account.limit} and the API "
        f"keeps {keep} unreserved"]
    return Plan({"maintenance": 1, "push": push}, notes)
