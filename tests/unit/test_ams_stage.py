"""The deployed AMS endpoint: a second API of the same handler whose stage selects the AMS dialect (the API in the
template: tests/package/test_app_template.py)."""

from __future__ import annotations

from chalicelib.api.dialect import Dialect, dialect_of


def test_the_dialect_is_the_stage_variable_and_nothing_else() -> None:
    assert dialect_of({"dialect": "ams"}) is Dialect.AMS
    assert dialect_of(None) is Dialect.GOOGLE and dialect_of({}) is Dialect.GOOGLE
    assert dialect_of({"dialect": "AMS "}) is Dialect.GOOGLE and dialect_of({"other": "ams"}) is Dialect.GOOGLE
