"""Python's ``$`` also matches before a final newline, so every check written ``^...$`` let a value with a
trailing "\n" through (found while fuzzing: a topic id ``abc%0A`` in the URL). The checks end with ``\\Z`` now;
each is held to it here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.api.account_requests import user_name, user_request
from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.timefmt import parse_duration, parse_timestamp
from chalicelib.core.wire.messages import decode_data
from chalicelib.delivery.push_request import attribute_header

REFUSED: list[tuple[Callable[[str], Any], str]] = [
    (lambda v: names.make("p", "topics", v), "orders"),
    (lambda v: names.make(v, "topics", "orders"), "my-project"),
    (names.check_project, "my-project"),
    (user_name, "alice"),
    (lambda v: user_request({"email": v}), "alice@example.com"),
    (decode_data, "aGVsbG8="),
    (lambda v: parse_duration(v, "ttl"), "10s"),
    (lambda v: parse_timestamp(v, "time"), "2026-11-24T10:00:00Z"),
]


@pytest.mark.parametrize(("check", "good"), REFUSED)
def test_a_trailing_newline_is_refused(check: Callable[[str], Any], good: str) -> None:
    check(good)  # positive control
    with pytest.raises(InvalidArgument):
        check(good + "\n")


def test_an_attribute_with_a_trailing_newline_never_becomes_a_push_header() -> None:
    assert attribute_header("x-order")
    assert not attribute_header("x-order\n")
