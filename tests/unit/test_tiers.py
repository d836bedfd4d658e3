"""The test tiers of tests/conftest.py: which directories a ``-m`` expression collects, and the quick tiers of
``make check`` (unit, functional) importing nothing from the slower ones, whose modules they would then load."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import TESTS, TIERS, selects_tier, tier_of

QUICK = ("unit", "functional")


@pytest.mark.parametrize(("expression", "collected"), [
    ("unit or functional", {"unit", "functional"}),
    ("package", {"package"}),
    ("not spark", set(TIERS) - {"spark"}),
    ("not package and not e2e", set(TIERS) - {"package", "e2e"}),
    ("", set(TIERS)),
    ("unit and slow", set(TIERS)),  # a marker that is not a tier: every directory may hold such tests
])
def test_a_tier_expression_collects_only_the_directories_it_can_select(expression: str, collected: set[str]) -> None:
    assert {tier for tier in TIERS if selects_tier(expression, tier)} == collected


def test_every_tier_is_a_directory_and_marks_its_files() -> None:
    assert {p.name for p in TESTS.iterdir() if (p / "__init__.py").exists()} == set(TIERS)
    assert tier_of(TESTS / "package" / "test_app_template.py") == "package"
    assert tier_of(TESTS / "webhooks.py") is None  # shared helpers belong to no tier


def _imported_tiers(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found |= {name.split(".")[1] for name in names if name.startswith("tests.")}
    return found & set(TIERS)


def test_the_quick_tiers_import_no_slower_tier() -> None:
    paths = [path for tier in QUICK for path in (TESTS / tier).glob("*.py")]
    slower = {str(path.relative_to(TESTS)): _imported_tiers(path.read_text()) - set(QUICK) for path in paths}
    assert len(paths) > 50 and {name: tiers for name, tiers in slower.items() if tiers} == {}
