"""What the spark_emr jobs import, and a check that an interpreter can import all of it.

    python -m infra.emr.imports [--python .venv-emr/bin/python]

``closure()`` reads the job modules' source (every ``import``, at module level or inside a function, except under
``if TYPE_CHECKING:``) and follows spark_emr and chalicelib modules: the project modules a job can load on EMR,
and the third-party packages they import. ``check(python)`` imports every one of them in ``python -I`` with the
repository as the only path added (so nothing of the developer's venv leaks in) and names each module that is
missing, and who imports it. ``make emr-imports`` runs it in .venv-emr, which holds exactly
infra/emr/requirements-emr.txt and the PySpark of EMR 7 (which EMR provides).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("compact", "retention", "metrics", "replay")  # infra/emr/package.py ships these entry points
JOB_MODULES = tuple(f"spark_emr.{job}" for job in JOBS)
PROJECT = ("spark_emr", "chalicelib")
PLATFORM = frozenset({"pyspark", "py4j"})  # EMR 7 provides Spark 3.5's Python side


def module_file(name: str, root: Path = ROOT) -> Path | None:
    path = root.joinpath(*name.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, package: str) -> list[str]:
    """The modules ``tree`` imports (``from m import x``: ``m``, and ``m.x`` in case x is a project module)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for other in node.orelse:
                visit(other)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append(module)
            if module.split(".")[0] in PROJECT:
                found.extend(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def closure(starts: tuple[str, ...] = JOB_MODULES, root: Path = ROOT) -> tuple[list[str], dict[str, list[str]]]:
    """(the project modules the jobs load, ``{third-party top-level module: [project modules importing it]}``)."""
    seen: set[str] = set()
    external: dict[str, set[str]] = {}
    todo = list(starts)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(name, root)
        if path is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # the packages' __init__ run first
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for module in _imports(ast.parse(path.read_text(), str(path)), package):
            top = module.split(".")[0]
            if top in PROJECT:
                if module_file(module, root) is not None:
                    todo.append(module)
            elif top and top not in sys.stdlib_module_names and top != "__future__":
                external.setdefault(module, set()).add(name)
    return sorted(seen), {k: sorted(v) for k, v in sorted(external.items())}


CHECK = r"""
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
missing, broken = {}, {}
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing.setdefault(exc.name or name, []).append(name)
    except Exception as exc:
        broken[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"missing": missing, "broken": broken, "path": sys.path}))
"""


def check(python: str, root: Path = ROOT, extra_code: str = "") -> dict[str, object]:
    """Import every module of ``closure()`` in ``python -I`` with only ``root`` added to its path."""
    internal, external = closure(root=root)
    modules = sorted(external) + internal
    python = os.path.abspath(python)  # not resolved: a venv's python is a symlink out of the venv
    done = subprocess.run([python, "-I", "-c", extra_code + CHECK, str(root), json.dumps(modules)],
                          capture_output=True, text=True, timeout=300, cwd="/", check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{python} could not run the import check: {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["importers"] = external
    return result


def problems(result: dict[str, object]) -> list[str]:
    importers = result["importers"]
    assert isinstance(importers, dict)
    out = []
    missing = result["missing"]
    assert isinstance(missing, dict)
    for module, failing in sorted(missing.items()):
        users = importers.get(module) or sorted({u for k, v in importers.items() if k.split(".")[0] == module
                                                 for u in v})
        out.append(f"missing module {module!r}: importing {', '.join(failing)} fails"
                   + (f" (imported by {', '.join(users)})" if users else ""))
    broken = result["broken"]
    assert isinstance(broken, dict)
    out.extend(f"{name}: {error}" for name, error in sorted(broken.items()))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Import every module the spark_emr jobs load, in an interpreter.")
    p.add_argument("--python", default=str(ROOT / ".venv-emr" / "bin" / "python"))
    args = p.parse_args(argv)
    internal, external = closure()
    found = problems(check(args.python))
    for line in found:
        print(line)
    print(f"{'FAILED' if found else 'ok'}: {len(internal)} project modules and {len(external)} third-party modules "
          f"({', '.join(external)}) in {args.python}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
