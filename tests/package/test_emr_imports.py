"""The EMR jobs' imports: infra/emr/requirements-emr.txt lists exactly the distributions they import, every EMR
path installs that file, and (with .venv-emr, `make emr-imports`) every module they load imports from it alone.

The defect this guards against: retention imported chalicelib modules that need pydantic while the EMR nodes got
pyarrow, boto3 and numpy only, so the job failed on import on EMR and nowhere else."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import sys
from pathlib import Path

import pytest

from infra.emr import imports, package
from infra.emr import venv as emr_venv

ROOT = Path(__file__).resolve().parents[2]
EMR_PYTHON = ROOT / ".venv-emr" / "bin" / "python"


def _distribution_of(module: str) -> str:
    top = module.split(".", maxsplit=1)[0]
    found = importlib.metadata.packages_distributions().get(top)
    assert found, f"{module}: no installed distribution provides it"
    return emr_venv.normalize(found[0])


def test_the_closure_covers_every_job_and_what_retention_needs() -> None:
    internal, external = imports.closure()
    assert set(imports.JOB_MODULES) <= set(internal)
    assert {"spark_emr.settings", "chalicelib.core.wire.models", "chalicelib.store.archive"} <= set(internal)
    assert "chalicelib.core.wire.models" in external["pydantic"]  # the import that broke retention on EMR
    assert set(external["boto3"]) == {"spark_emr.common"}  # imported inside a function: found all the same
    assert not [m for m in external if m.startswith("mypy_boto3")]  # `if TYPE_CHECKING:` imports are not run


def test_requirements_emr_lists_exactly_the_distributions_the_jobs_import() -> None:
    _, external = imports.closure()
    imported = {_distribution_of(m) for m in external if m.split(".")[0] not in imports.PLATFORM}
    assert imported == set(emr_venv.direct_pins()), (
        "infra/emr/requirements-emr.txt's first section must list exactly the distributions the jobs import")
    assert set(emr_venv.direct_pins()) <= set(emr_venv.pins())


def test_requirements_emr_pins_what_the_project_pins() -> None:
    shared: dict[str, str] = {}
    for name in ("requirements.txt", "requirements-run.txt", "requirements-dev.txt"):
        for line in (ROOT / name).read_text().splitlines():
            found = re.match(r"^([A-Za-z0-9_.\-\[\]]+)==(\S+)", line.strip())
            if found:
                shared[emr_venv.normalize(found[1].split("[")[0])] = found[2]
    pins = emr_venv.pins()
    common = [name for name in pins if name in shared]
    assert {"boto3", "botocore", "pyarrow", "pydantic"} <= set(common)
    for name in common:  # the versions the jobs' tests run on (the rest are resolved by pip: not compared)
        assert pins[name] == shared[name], f"{name}: requirements-emr.txt {pins[name]}, the project pins {shared[name]}"


def test_every_emr_path_installs_requirements_emr() -> None:
    bootstrap = (ROOT / "infra/emr/bootstrap.sh").read_text()
    assert "requirements-emr.txt" in bootstrap and "pip install" in bootstrap and " -r " in bootstrap
    assert not re.search(r"pip install[^\n]*(pyarrow|boto3|numpy)", bootstrap)  # no list of its own
    assert emr_venv.REQUIREMENTS == ROOT / "infra/emr/requirements-emr.txt"  # the serverless archive
    makefile = (ROOT / "Makefile").read_text()
    assert "-r infra/emr/requirements-emr.txt" in makefile  # .venv-emr
    assert '"bootstrap.sh", "requirements-emr.txt"' in Path(package.__file__).read_text()  # uploaded beside it


def test_the_check_names_the_missing_module_and_who_needs_it() -> None:
    """A positive control: the same check, in an interpreter where pydantic cannot be imported."""
    block = ("import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
             "        if name.split('.')[0] == 'pydantic':\n"
             "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
             "sys.meta_path.insert(0, _Block())\n")
    found = imports.problems(imports.check(sys.executable, extra_code=block))
    (line,) = [p for p in found if "pydantic" in p.split(":")[0]]
    assert line.startswith("missing module 'pydantic'") and "spark_emr.retention" in line
    assert "chalicelib.core.wire.models" in line  # who imports it


def test_the_jobs_import_with_requirements_emr_alone() -> None:
    """.venv-emr holds exactly requirements-emr.txt and EMR 7's PySpark (`make emr-imports` builds it)."""
    if not EMR_PYTHON.exists():
        if os.environ.get("METRO_EMR_VENV_REQUIRED"):
            pytest.fail(f"{EMR_PYTHON} is missing: make emr-imports builds it")
        pytest.skip(f"{EMR_PYTHON} is missing: make emr-imports builds it and runs this test")
    listed = json.loads(_run([str(EMR_PYTHON), "-I", "-c",
                              "import importlib.metadata as m, json; "
                              "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"]))
    have = {emr_venv.normalize(k): v for k, v in listed.items()}
    have = {k: v for k, v in have.items() if k not in ("pip", "setuptools", "wheel")}
    extra = {k for k in have if k not in emr_venv.pins() and k not in imports.PLATFORM}
    assert not extra, f".venv-emr holds more than requirements-emr.txt: {sorted(extra)}"
    assert {k: have.get(k) for k in emr_venv.pins()} == emr_venv.pins()
    assert have["pyspark"].startswith("3.5.")  # EMR 7's Spark
    result = imports.check(str(EMR_PYTHON))
    assert not imports.problems(result), "\n".join(imports.problems(result))
    version, base = _run([str(EMR_PYTHON), "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2]); "
                                                      "print(sys.base_prefix)"]).split()
    assert version == emr_venv.PYTHON_VERSION  # the archive's Python
    path = result["path"]
    assert isinstance(path, list)
    outside = [p for p in path if p and not p.startswith((str(ROOT / ".venv-emr"), base)) and p != str(ROOT)]
    assert not outside, f"on the path besides the repository and .venv-emr: {outside}"


def _run(cmd: list[str]) -> str:
    import subprocess

    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
