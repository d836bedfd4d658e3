"""The package rules of docs/architecture.md, checked on the source: which package may import which."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHALICELIB = ROOT / "chalicelib"

# package -> the chalicelib packages (and top-level modules) it may import; docs/architecture.md says why.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "store": {"core", "config"},
    "service": {"core", "store", "config"},
    "delivery": {"core", "store", "service", "config", "runtime"},
    "api": {"core", "service", "runtime", "config"},
    "runtime": {"service", "store", "config"},  # the composition root: builds the stores and services
    "config": set(),
}
# Third-party or standard modules that do I/O: only the listed packages may import them.
IO_MODULES = {"boto3": {"store", "local"}, "botocore": {"store", "local"}, "socket": {"store", "delivery", "local"},
              "urllib3": {"delivery"}, "chalice": {"api", "local"}, "requests": set()}


def _package(path: Path) -> str:
    rel = path.relative_to(CHALICELIB)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "chalicelib":  # from chalicelib import config
            out.extend(f"chalicelib.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return out


def _sources() -> list[Path]:
    return sorted(p for p in CHALICELIB.rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_package_rules(path: Path) -> None:
    package = _package(path)
    if package == "local":  # the local stack sits outside and drives the rest
        return
    for module in _imports(path):
        top, _, rest = module.partition(".")
        if top == "chalicelib":
            target = rest.split(".")[0]
            assert target == package or target in ALLOWED[package], f"{package} must not import {module}"
        elif top in IO_MODULES:
            assert package in IO_MODULES[top], f"{package} must not import {module} (I/O belongs elsewhere)"


def test_every_package_has_a_rule() -> None:
    packages = {_package(p) for p in _sources()} - {"local"}
    assert packages <= set(ALLOWED), packages - set(ALLOWED)


def test_the_document_names_every_package() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    for package in ALLOWED:
        assert f"`{package}" in text, f"docs/architecture.md does not describe {package}"
