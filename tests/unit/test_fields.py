"""Scalar request fields read as proto3 JSON reads them."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.fields import bool_field, int_field


@pytest.mark.parametrize(("body", "want"), [({}, 7), ({"maxMessages": None}, 7), ({"maxMessages": 3}, 3),
                                            ({"max_messages": 4}, 4), ({"maxMessages": 5.0}, 5),
                                            ({"maxMessages": " 6"}, 6), ({"maxMessages": "-2"}, -2)])
def test_int_field_accepts_integers_and_their_strings(body: dict[str, Any], want: int) -> None:
    assert int_field(body, "maxMessages", "max_messages", default=7) == want


@pytest.mark.parametrize("raw", [10.7, True, "ten", "1.5", [1], {"a": 1}, 2.5])
def test_int_field_refuses_the_rest(raw: Any) -> None:
    with pytest.raises(InvalidArgument, match="max_messages"):
        int_field({"maxMessages": raw}, "maxMessages", "max_messages")


@pytest.mark.parametrize(("raw", "want"), [(None, False), (True, True), (False, False), ("true", True),
                                           ("false", False)])
def test_bool_field(raw: Any, want: bool) -> None:
    assert bool_field({"returnImmediately": raw}, "returnImmediately", "return_immediately") is want


@pytest.mark.parametrize("raw", ["x", 1, 0, "True", [], {}])
def test_bool_field_refuses_non_booleans(raw: Any) -> None:
    with pytest.raises(InvalidArgument, match="return_immediately"):
        bool_field({"returnImmediately": raw}, "returnImmediately", "return_immediately")
