"""The package rules of docs/architecture.md, checked on the source: which package may import which, who may
reach the network, where storage keys are spelled, and that no thread pool starts at import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHALICELIB = ROOT / "chalicelib"
APP = ROOT / "app.py"

# package -> the chalicelib packages (and top-level modules) it may import; docs/architecture.md says why.
ALLOWED: dict[str, set[str]] = {
    "app": {"api", "delivery", "config", "observability"},  # app.py: the Chalice routes and event handlers
    "core": set(),
    "store": {"core", "config"},
    "service": {"core", "store", "config", "observability"},
    "delivery": {"core", "store", "service", "config", "runtime", "observability"},
    "api": {"core", "service", "runtime", "config"},
    "runtime": {"service", "store", "config"},  # the composition root: builds the stores and services
    "config": set(),
    "observability": {"core", "config"},  # log lines and metrics (Powertools); no AWS call of its own
    # python -m chalicelib.container: the gRPC edge as a long-running process. It drives the rest, as local/ does,
    # but through the composition root and local/'s gRPC server only (no emulator, no HTTP server of its own).
    "container": {"local", "runtime", "config", "core"},
    # `metro`, the command line (docs/cli.md): a client of a running Metro over its REST API, so it imports nothing
    # of the service; its one HTTP client (cli/client.py) is the only module outside local/ that may use urllib.
    # `metro reset` wipes this machine's local state: local/'s data directory is the one thing it may import.
    "cli": {"local"},
}
STORE = {"store", "local"}
# Modules that reach AWS or the network (a module or any of its submodules): only these packages may import
# them. store/ is the only package that talks to AWS, DNS and push endpoints; local/ drives the whole stack.
IO_MODULES: dict[str, set[str]] = {
    "boto3": STORE, "botocore": STORE, "s3transfer": STORE, "aiobotocore": STORE,
    "socket": STORE, "ssl": STORE, "select": STORE, "selectors": STORE, "urllib3": STORE,
    "http.client": STORE, "http.server": {"local"}, "socketserver": {"local"}, "urllib.request": {"local", "cli"},
    "xmlrpc": {"local"}, "ftplib": {"local"}, "smtplib": {"local"}, "imaplib": {"local"}, "poplib": {"local"},
    "telnetlib": {"local"}, "asyncio": {"local"}, "requests": set(), "httpx": set(), "aiohttp": set(),
    "websocket": set(), "websockets": set(), "pycurl": set(),
    "chalice": {"api", "local", "app"},
    "grpc": {"api", "local", "container"},  # the gRPC edge, like Chalice an edge: api/rpc/ and the servers that run it
}
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_IMPORTERS = {"import_module", "__import__"}


def _package(path: Path) -> str:
    if path == APP:
        return "app"
    rel = path.relative_to(CHALICELIB)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The module a ``from ... import`` names, relative imports resolved against ``path``."""
    if not node.level:
        return node.module or ""
    base = list(path.relative_to(ROOT).with_suffix("").parts)[:-node.level]
    return ".".join([*base, *([node.module] if node.module else [])])


def _importer(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in _IMPORTERS


def _string_imports(tree: ast.Module) -> list[str]:
    """Modules imported by name at run time (``importlib.import_module("x")``, ``__import__("x")``). An import
    whose name is not a literal counts as importing every dotted module name written in the module; one that
    names none is reported as ``<dynamic>``, which no rule allows."""
    out: list[str] = []
    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _importer(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append(arg.value)
            else:
                dynamic = True
    if dynamic:
        named = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and _MODULE_NAME.match(n.value)]
        out.extend(named or ["<dynamic>"])
    return out


def imports(source: str, path: Path) -> list[str]:
    """Every module ``source`` imports: statements (``from x import y`` counts as ``x`` and ``x.y``) and
    string imports."""
    tree = ast.parse(source)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            out.append(module)
            out.extend(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return out + _string_imports(tree)


def _io_rule(module: str) -> set[str] | None:
    for name, packages in IO_MODULES.items():
        if module == name or module.startswith(f"{name}."):
            return packages
    return None


def violations(package: str, source: str, path: Path) -> list[str]:
    """What ``source`` (of ``package``) imports against the rules."""
    found: list[str] = []
    for module in imports(source, path):
        top, _, rest = module.partition(".")
        if module == "<dynamic>":
            found.append(f"{package} imports a module whose name the rules cannot see")
        elif top == "chalicelib":
            target = rest.split(".")[0]
            if target and target != package and target not in ALLOWED[package]:
                found.append(f"{package} must not import {module}")
        elif (rule := _io_rule(module)) is not None and package not in rule:
            found.append(f"{package} must not import {module} (network I/O belongs to store/)")
    return sorted(set(found))


def _sources() -> list[Path]:
    return [APP, *sorted(p for p in CHALICELIB.rglob("*.py") if p.name != "__init__.py")]


def _checked_sources() -> list[Path]:
    return [p for p in _sources() if _package(p) != "local"]  # the local stack sits outside and drives the rest


@pytest.mark.parametrize("path", _checked_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_package_rules(path: Path) -> None:
    assert violations(_package(path), path.read_text(), path) == []


@pytest.mark.parametrize(("package", "source"), [
    ("service", "import http.client"),
    ("service", "from http import client"),
    ("delivery", "import socket"),
    ("delivery", "from ssl import create_default_context"),
    ("api", "from urllib import request"),
    ("api", "import urllib.request as fetch"),
    ("core", "import importlib\nimportlib.import_module('socket')"),
    ("core", "__import__('http.client')"),
    ("service", "from importlib import import_module\nimport_module('urllib3.poolmanager')"),
    ("runtime", "import importlib\nimportlib.import_module(name)"),
    ("app", "import requests"),
    ("app", "import boto3"),
    ("core", "from chalicelib.store import aws"),
    ("core", "import importlib\nimportlib.import_module('chalicelib.service.' + name)\nX = 'chalicelib.service.pull'"),
])
def test_network_and_upward_imports_are_found_however_written(package: str, source: str) -> None:
    assert violations(package, source, CHALICELIB / package / "probe.py")


def test_the_allowed_ones_pass() -> None:
    assert violations("store", "import socket\nimport ssl\nfrom http import client\nimport urllib3", CHALICELIB) == []
    assert violations("app", "from chalice.app import Chalice\nfrom chalicelib.api import routes", APP) == []
    assert violations("core", "from http import HTTPStatus\nimport importlib\nimportlib.import_module("
                              "'chalicelib.core.names')", CHALICELIB / "core" / "probe.py") == []


def test_every_package_has_a_rule() -> None:
    packages = {_package(p) for p in _sources()} - {"local"}
    assert packages <= set(ALLOWED), packages - set(ALLOWED)


def test_the_document_names_every_package() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    for package in ALLOWED:
        assert f"`{package}" in text, f"docs/architecture.md does not describe {package}"


_DOCUMENTED_PATH = re.compile(r"`((?:api|core|service|store|delivery|local)/[\w/]*\w)(?:\.py|/|\.\w+)?[`(]")


def test_every_path_the_document_names_exists() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(_DOCUMENTED_PATH.findall(text))
    assert named, "the document names no module"
    missing = [n for n in sorted(named) if not (CHALICELIB / n).is_dir() and not (CHALICELIB / f"{n}.py").exists()]
    assert missing == [], "docs/architecture.md names modules that do not exist"


def test_a_sub_package_follows_its_package_rules() -> None:
    assert _package(CHALICELIB / "core" / "wire" / "models.py") == "core"
    assert _package(CHALICELIB / "api" / "openapi" / "page.py") == "api"
    assert _package(CHALICELIB / "config.py") == "config"
    probe = CHALICELIB / "core" / "wire" / "probe.py"
    within = "from ..queueing import envelope\nfrom chalicelib.core.access import identity"
    assert violations("core", within, probe) == []
    assert "core must not import chalicelib.service.pull" in violations("core", "from ...service import pull", probe)


# -- storage keys are spelled in store/ only ---------------------------------------------------------------
_KEY_PREFIX = re.compile(r"^[a-z][a-z_]*#")  # "topic#", f"sub#{id}": an item key's kind


def _key_literals(source: str) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and _KEY_PREFIX.match(n.value)]


@pytest.mark.parametrize("path", _checked_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_storage_keys_are_spelled_in_store_only(path: Path) -> None:
    if _package(path) == "store":
        return
    assert _key_literals(path.read_text()) == [], "a storage key belongs in store/ (a function there builds it)"


def test_the_key_rule_sees_f_strings_and_plain_prefixes() -> None:
    assert sorted(_key_literals('key = f"sub#{name.id}"\nprefix = "topic#"')) == ["sub#", "topic#"]
    assert _key_literals('ref = f"#/components/responses/Error{code}"\ntext = "a # comment"') == []


# -- no thread pool starts at import ----------------------------------------------------------------------
_POOLS = {"ThreadPoolExecutor", "ProcessPoolExecutor", "Thread", "Pool"}


def _import_time_pools(source: str) -> list[int]:
    """Lines that build a pool or thread while the module (or a class body) is imported."""
    lines: list[int] = []
    todo: list[ast.AST] = list(ast.parse(source).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue  # runs when called, not at import
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _POOLS:
                lines.append(node.lineno)
        todo.extend(ast.iter_child_nodes(node))
    return sorted(lines)


@pytest.mark.parametrize("path", _checked_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_thread_pool_starts_at_import(path: Path) -> None:
    assert _import_time_pools(path.read_text()) == [], "threads come from the context's workers (store/workers.py)"


def test_the_pool_rule_sees_module_level_and_class_level_pools() -> None:
    source = ("import concurrent.futures as cf\nPOOL = cf.ThreadPoolExecutor(4)\n"
              "class A:\n    pool = ThreadPoolExecutor(2)\n    def f(self):\n        return ThreadPoolExecutor(1)\n")
    assert _import_time_pools(source) == [2, 4]
