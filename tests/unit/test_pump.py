"""The local stream pump tells records that still need fan-out from those publish already fanned out."""

from __future__ import annotations

from typing import Any

from chalicelib.local.pump import _fanned_out


def record(image: dict[str, Any]) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"NewImage": {"topic": {"S": "projects/p/topics/t"}, **image}}}


def test_fanned_out_records_are_told_apart() -> None:
    assert _fanned_out(record({"fo": {"BOOL": True}}))
    assert not _fanned_out(record({}))
    assert not _fanned_out(record({"fo": {"BOOL": False}}))
    assert not _fanned_out({"dynamodb": {}})
