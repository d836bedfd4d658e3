"""Request and message ids: time-sortable decimal strings (see docs/storage.md)."""

from __future__ import annotations

import secrets
from collections.abc import Callable

RandomSource = Callable[[], int]


def _random6() -> int:
    return secrets.randbelow(1_000_000)


class IdSource:
    """Makes request ids from an injected clock value and random source."""

    def __init__(self, rand: RandomSource = _random6) -> None:
        self._rand = rand

    def request_id(self, now: float) -> str:
        return f"{int(now * 1000):013d}{self._rand():06d}"

    def token(self) -> str:
        return secrets.token_hex(8)

    def secret(self) -> str:
        """An unguessable value (160 random bits, hex): AMS's verification hashes and push authorization."""
        return secrets.token_hex(20)

    def generation(self) -> int:
        return self._rand()


def message_id(request_id: str, index: int) -> str:
    return f"{request_id}{index:03d}"


def split_message_id(mid: str) -> tuple[str, int]:
    return mid[:-3], int(mid[-3:])


def publish_ms(mid_or_rid: str) -> int:
    return int(mid_or_rid[:13])
