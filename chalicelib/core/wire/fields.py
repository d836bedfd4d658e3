"""Scalar request fields as proto3 JSON reads them: camelCase or snake_case, integers and booleans strictly."""

from __future__ import annotations

from typing import Any

from chalicelib.core.errors import InvalidArgument


def _raw(body: dict[str, Any], camel: str, snake: str) -> Any:
    return body.get(camel, body.get(snake))


def int_field(body: dict[str, Any], camel: str, snake: str, default: int = 0) -> int:
    """An int32 field: a JSON number with no fractional part, or a decimal string; absent or null = default."""
    raw = _raw(body, camel, snake)
    if raw is None:
        return default
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            pass
    raise InvalidArgument(f"Invalid value at '{snake}' (TYPE_INT32), {_show(raw)}")


def bool_field(body: dict[str, Any], camel: str, snake: str) -> bool:
    """A bool field: true/false (or their string forms); absent or null = false."""
    raw = _raw(body, camel, snake)
    if raw is None:
        return False
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw in ("true", "false"):
        return raw == "true"
    raise InvalidArgument(f"Invalid value at '{snake}' (TYPE_BOOL), {_show(raw)}")


def _show(raw: Any) -> str:
    text = repr(raw) if not isinstance(raw, str) else f'"{raw}"'
    return text[:60]
