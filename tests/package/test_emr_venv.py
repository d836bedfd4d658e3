"""infra/emr/venv.py: the EMR Serverless jobs' Python environment (requirements-emr.txt for arm64, laid out as a
venv-pack archive that Spark unpacks as ./environment).

The builds (METRO_EMR_BUILD=1, set by `make emr-imports`; pip fetches the wheels, ~80 MB once) check the arm64
archive (every native file in it is aarch64, exactly the pins) and run the same builder for this machine's
architecture with this machine's Python 3.11 copied in: unpacked elsewhere and run with an empty environment, that
interpreter imports every module the jobs load from the archive and the code bundle alone. What no test here can
do is run the arm64 archive: that needs an arm64 machine (docs/pipeline.md)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from infra.emr import imports, package
from infra.emr import venv as emr_venv

ROOT = Path(__file__).resolve().parents[2]
build_only = pytest.mark.skipif(not os.environ.get("METRO_EMR_BUILD"),
                                reason="builds the environment with pip (METRO_EMR_BUILD=1: make emr-imports)")
ELF_MACHINES = {183: "aarch64", 62: "x86_64"}


def test_pip_installs_wheels_for_the_target_platform_and_python() -> None:
    cmd = emr_venv.pip_install_command(Path("/t"), "aarch64")
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert "--only-binary=:all:" in cmd  # nothing compiled for the build machine
    flags = {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--") and "=" not in cmd[i]}
    assert flags["--python-version"] == "3.11" and flags["--abi"] == "cp311" and flags["--implementation"] == "cp"
    assert flags["--target"] == "/t" and cmd[-2:] == ["-r", str(emr_venv.REQUIREMENTS)]
    platforms = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"]
    assert platforms and all(p.endswith("_aarch64") for p in platforms)
    assert max(int(p.split("_")[2]) for p in platforms if p.startswith("manylinux_2_")) <= 34  # AL2023's glibc


def test_every_requirement_is_pinned() -> None:
    pins = emr_venv.pins()
    assert len(pins) >= 5 and all(v and v[0].isdigit() for v in pins.values())
    assert "pyspark" not in pins  # EMR provides it


def test_the_system_layout_is_venv_packs(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    layout = emr_venv.link_system_interpreter(env)
    assert layout == {"interpreter": "system", "from": "/usr/bin/python3.11"}
    assert os.readlink(env / "bin" / "python") == "python3.11"
    assert os.readlink(env / "bin" / "python3.11") == "/usr/bin/python3.11"
    cfg = (env / "pyvenv.cfg").read_text()
    assert "home = /usr/bin" in cfg and "include-system-site-packages = false" in cfg


def test_the_archive_is_reproducible_and_keeps_symlinks(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    emr_venv.link_system_interpreter(env)
    (env / "lib").mkdir()
    (env / "lib" / "x.py").write_text("x = 1\n")
    one = emr_venv.write_archive(env, tmp_path / "one.tar.gz").read_bytes()
    os.utime(env / "lib" / "x.py", (1, 1))
    assert emr_venv.write_archive(env, tmp_path / "two.tar.gz").read_bytes() == one
    with tarfile.open(tmp_path / "one.tar.gz") as tar:
        python = tar.getmember("bin/python")
        assert python.issym() and python.linkname == "python3.11"
        assert all(m.uid == 0 and not m.name.startswith(("/", "environment/")) for m in tar.getmembers())


def test_an_interpreter_of_another_architecture_is_refused(tmp_path: Path) -> None:
    other = "aarch64" if platform.machine() != "aarch64" else "x86_64"
    with pytest.raises(SystemExit, match="build on an"):
        emr_venv.bundle_interpreter(tmp_path / "environment", sys.executable, other)


def _elf_machine(data: bytes) -> str | None:
    if data[:4] != b"\x7fELF":
        return None
    return ELF_MACHINES.get(int.from_bytes(data[18:20], "little"), "other")


@build_only
def test_the_arm64_archive_holds_exactly_the_pins_and_only_aarch64_binaries(tmp_path: Path) -> None:
    archive, manifest = emr_venv.build(tmp_path, "aarch64")
    assert manifest["requirements"] == emr_venv.pins() and manifest["arch"] == "aarch64"
    assert emr_venv.read_manifest(archive)["requirements"] == emr_venv.pins()
    machines: dict[str, int] = {}
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        for member in tar.getmembers():
            if member.isfile() and (".so" in member.name or "/bin/" in member.name):
                handle = tar.extractfile(member)
                assert handle is not None
                machine = _elf_machine(handle.read(20))
                if machine:
                    machines[machine] = machines.get(machine, 0) + 1
    assert set(machines) == {"aarch64"}, machines  # pyarrow, numpy, pydantic-core: all arm64
    site = "lib/python3.11/site-packages/"
    for module in ("pyarrow/__init__.py", "pydantic/__init__.py", "boto3/__init__.py", "numpy/__init__.py"):
        assert site + module in names
    assert not [n for n in names if "__pycache__" in n]
    size = archive.stat().st_size
    print(f"\narm64 environment: {size / 2**20:.1f} MiB, {machines['aarch64']} native files")
    assert size < 150 * 2**20


@build_only
def test_the_same_builder_makes_a_self_contained_environment_that_runs_the_jobs(tmp_path: Path) -> None:
    """This machine's architecture and Python 3.11 copied in, the same code path as an arm64 builder's."""
    base = getattr(sys, "_base_executable", sys.executable)
    arch = platform.machine()
    archive, manifest = emr_venv.build(tmp_path / "out", arch, base)
    assert manifest["interpreter"] == "bundled"
    work = tmp_path / "node"  # where Spark unpacks spark.archives: ./environment
    (work / "environment").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(work / "environment", filter="tar")
    code = package.build_zip(work)  # --py-files
    # EMR provides Spark's Python side (SPARK_HOME/python): pyspark and py4j alone, from .venv
    spark = work / "spark-python"
    spark.mkdir()
    import py4j
    import pyspark

    for mod in (pyspark, py4j):
        (spark / mod.__name__).symlink_to(Path(mod.__file__ or "").parent)
    python = work / "environment" / "bin" / "python"
    env = {"PATH": "/usr/bin:/bin"}  # nothing of this machine's Python setup
    done = subprocess.run([str(python), "-c", "import sys, json; print(json.dumps([sys.prefix, sys.path]))"],
                          env=env, cwd=work, capture_output=True, text=True, check=True)
    prefix, path = json.loads(done.stdout)
    assert prefix == str(work / "environment")
    assert all(p.startswith(str(work)) for p in path if p), path
    # the import check, with the code bundle as the root and EMR's pyspark added
    result = imports.check(str(python), root=ROOT, extra_code=f"import sys; sys.path[:0] = [{str(code)!r}]; "
                                                               f"sys.path.append({str(spark)!r})\n")
    assert not imports.problems(result), "\n".join(imports.problems(result))
    found = subprocess.run([str(python), "-c", f"import sys; sys.path[:0] = [{str(code)!r}]; "
                                               "import spark_emr.retention as r; print(r.__file__)"],
                           env=env, cwd=work, capture_output=True, text=True, check=True)
    assert "metro-emr.zip" in found.stdout  # the code came from the bundle, not the repository
