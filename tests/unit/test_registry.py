"""The method registry (api/registry.py): one declaration per method, every table derived from it, and a verb
spelled once in the api package (in its declaration), not in every table by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import app
from chalicelib.api import registry
from chalicelib.api.methods import Method
from chalicelib.api.permissions import PUBLIC

ROOT = Path(__file__).resolve().parents[2]
API_FILES = [*sorted((ROOT / "chalicelib" / "api").rglob("*.py")), ROOT / "app.py"]


def test_app_registers_exactly_the_registrys_routes() -> None:
    assert set(app.routes) == set(registry.ROUTES)
    for route, methods in app.routes.items():
        assert set(methods) >= {http for http, _ in registry.table(route)}, route


def test_every_table_is_derived_from_the_declarations() -> None:
    for method in registry.METHODS:
        assert registry.table(method.route)[method.key] is method.handler
        assert registry.rule_for(method.route, method.http, method.verb) == method.rule
    assert sum(len(registry.table(route)) for route in registry.ROUTES) == len(registry.METHODS)


def test_a_method_declared_twice_is_refused() -> None:
    twice = Method("/v1/x", "GET", "", lambda: None, PUBLIC, "x")
    with pytest.raises(ValueError, match="declared twice"):
        registry._tables((twice, twice))


def test_a_verb_is_spelled_in_at_most_two_files_of_the_api() -> None:
    texts = {path: path.read_text() for path in API_FILES}
    for verb in sorted({m.verb for m in registry.METHODS if m.verb}):
        files = [p.name for p, text in texts.items() if re.search(rf'"{re.escape(verb)}"', text)]
        assert len(files) <= 2, (verb, files)
