"""Push flow control and retry delays; pure, with time injected (Unix seconds).

Retry policy (per message, Google ``retryPolicy``)::

    retry_delay(attempt) = min(maximum, minimum * 2 ** (attempt - 1))        attempt >= 1

Push backoff (per subscription, :class:`PushThrottle`). Acks and nacks are counted with
exponential decay (half-life ``H`` = 10 s): before each outcome both weights are multiplied
by ``2 ** (-dt / H)``, then the outcome adds 1 to its weight. With ``a`` and ``n`` the ack
and nack weights and ``c`` the ceiling (below)::

    f      = n / (a + n)                                  share of recent nacks
    pause  = 0                                            if n < 0.05 or f < 0.01
           = clamp(min(0.1 * 3125 ** f, c), 0.1, 60)      otherwise (3125 = 5 ** 5)
    delay(now) = max(0, last_outcome + pause - now)       the wait before the next push

The ceiling ``c`` is a ramp that the outcomes move, with ``p`` the pause before the outcome::

    nack: c = min(60, 2 * max(0.3, p))     a nack at most doubles the pause (0.6 s, 1.2 s, ... when fresh)
    ack:  c = p                            an ack never lengthens the pause

So one stray nack is not a 60 s stall, and neither is the first ack after a few nacks on a
subscription without ack history (where ``f`` alone would jump from ~0.75 to a ~40 s pause).

Calibration (Google's documented behaviour): at 5 msg/s with 1 nack/s, ``f`` = 0.2 and the
pause is 0.1 * 5 = 0.5 s, i.e. one push every ~500 ms. Nacking everything gives ``f`` = 1
and, from the 7th consecutive nack on, a pause of 38-60 s: one push every 38-60 s. As acks
return ``f`` falls and so does the pause, down to 0 once nacks are rare (``f`` < 1%) or
forgotten (``n`` < 0.05, ~43 s after the last nack).
``f`` is a share, so it does not change when the backoff itself slows the pushes down.

Concurrency (``max_outstanding``) is a slow-start window: +1 per ack up to ``cap``, halved per
nack (at least 1); it is 1 while the pause is non-zero.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

HALF_LIFE = 10.0
MIN_PAUSE = 0.1
MAX_PAUSE = 60.0
BASE = 3125.0
NACK_FLOOR = 0.05
TOLERATED_SHARE = 0.01
RAMP = 0.3
INITIAL_WINDOW = 3
DEFAULT_CAP = 100


def retry_delay(attempt: int, minimum: float, maximum: float) -> float:
    """Delay before redelivery attempt ``attempt`` (1 = the first retry): exponential, capped."""
    if attempt < 1:
        raise ValueError(f"attempt must be at least 1, not {attempt}")
    if minimum <= 0:
        return 0.0
    # Past 2**64 the product exceeds any maximum Pub/Sub accepts; this also avoids float overflow.
    return min(maximum, minimum * math.pow(2.0, min(attempt - 1, 64)))


@dataclass
class ThrottleState:
    """The stored state of one subscription's push throttle (plain numbers, DynamoDB-friendly)."""

    acks: float = 0.0
    nacks: float = 0.0
    updated: float = 0.0
    streak: int = 0
    window: float = float(INITIAL_WINDOW)
    ceiling: float = 0.0  # the most the pause may be (see the module docstring)

    def to_dict(self) -> dict[str, Any]:
        """A dict of numbers; a DynamoDB store converts the floats to ``Decimal``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThrottleState:
        """Inverse of :meth:`to_dict`; accepts ``Decimal`` and missing keys (defaults)."""
        default = cls()
        return cls(
            acks=float(data.get("acks", default.acks)),
            nacks=float(data.get("nacks", default.nacks)),
            updated=float(data.get("updated", default.updated)),
            streak=int(data.get("streak", default.streak)),
            window=float(data.get("window", default.window)),
            # a state stored before the ceiling existed keeps the formula's own pause
            ceiling=float(data.get("ceiling", MAX_PAUSE if "nacks" in data else default.ceiling)),
        )


class PushThrottle:
    """Backoff and concurrency for one push subscription (see the module docstring)."""

    def __init__(
        self, state: ThrottleState | None = None, *, cap: int = DEFAULT_CAP, half_life: float = HALF_LIFE
    ) -> None:
        if cap < 1:
            raise ValueError(f"cap must be at least 1, not {cap}")
        if half_life <= 0:
            raise ValueError(f"half_life must be positive, not {half_life}")
        self.state = state if state is not None else ThrottleState()
        self.cap = cap
        self.half_life = half_life

    def record(self, success: bool, now: float) -> None:
        """Record the outcome of one push (``success`` = acked, i.e. a 2xx answer)."""
        state = self.state
        previous = self.pause()
        elapsed = now - state.updated
        if elapsed > 0:
            factor = math.pow(2.0, -elapsed / self.half_life)
            state.acks *= factor
            state.nacks *= factor
            state.updated = now
        if success:
            state.acks += 1.0
            state.streak = 0
            state.window = min(float(self.cap), state.window + 1.0)
            state.ceiling = previous
        else:
            state.nacks += 1.0
            state.streak += 1
            state.window = max(1.0, state.window / 2.0)
            state.ceiling = min(MAX_PAUSE, 2.0 * max(RAMP, previous))

    def nack_share(self) -> float:
        """Share of nacks among the recent outcomes (0 without any)."""
        total = self.state.acks + self.state.nacks
        return self.state.nacks / total if total > 0 else 0.0

    def pause(self) -> float:
        """The pause that follows the last outcome: 0, or between 0.1 s and 60 s."""
        share = self.nack_share()
        if self.state.nacks < NACK_FLOOR or share < TOLERATED_SHARE:
            return 0.0
        pause = min(MIN_PAUSE * math.pow(BASE, share), self.state.ceiling)
        return max(MIN_PAUSE, min(MAX_PAUSE, pause))

    def backing_off(self) -> bool:
        return self.pause() > 0

    def delay(self, now: float) -> float:
        """Seconds to wait at ``now`` before the next push (0 = push now)."""
        pause = self.pause()
        if pause == 0:
            return 0.0
        return max(0.0, min(pause, self.state.updated + pause - now))

    def max_outstanding(self, now: float) -> int:
        """How many pushes may be in flight at ``now``: 1 while backing off, else the window."""
        if self.backing_off():
            return 1
        return max(1, min(self.cap, int(self.state.window)))
