"""Event handler entry points shared by Lambda (via app.py) and the local trigger pump."""

from __future__ import annotations

from typing import Any

from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import services


def fanout(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    return FanOut(services().ctx).handle(event, context)
