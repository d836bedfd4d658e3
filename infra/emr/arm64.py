"""Run the arm64 environment of the EMR Serverless jobs on this (x86_64) machine, under emulation.

    python -m infra.emr.arm64 [--root .metro/cache/arm64-root]      # `make emr-arm64`

EMR Serverless runs the jobs on Graviton; nothing here is arm64. This check comes as close as a package registry
allows: Debian 12's arm64 CPython 3.11 (and the system libraries it and the wheels need) unpacked into a sysroot
from Debian's packages (`apt-get download` with a private apt state: the machine's own apt configuration is left
alone), run with qemu-user (`apt-get install qemu-user`). Then:

1. infra/emr/venv.py builds the arm64 archive with that interpreter copied in (``--interpreter``): the code path of
   an arm64 builder;
2. the archive is unpacked as Spark unpacks ``spark.archives`` and its ``bin/python3.11`` imports every module the
   jobs load (infra/emr/imports.py) with the code bundle metro-emr.zip and PySpark's Python side only;
3. the pure tests of the jobs' Arrow, Parquet and planning code (tests/spark/test_records_plan.py,
   test_archive_layout.py) run in it, on the archive's aarch64 pyarrow, numpy and pydantic-core.

What it does not show: that Amazon Linux 2023's python3.11 (the interpreter to deploy with) behaves the same, and
anything about EMR Serverless itself. The archive built here carries Debian's interpreter (glibc 2.36; Amazon
Linux 2023 has 2.34) and is for this check only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from infra.emr import imports, package
from infra.emr import venv as emr_venv

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = ROOT / ".metro" / "cache" / "arm64-root"
# Debian 12 (bookworm): python3.11 and what it, its standard library and the wheels' native code load
DEBIAN_PACKAGES = (
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6", "libgcc-s1", "libstdc++6",
    "libexpat1", "zlib1g", "libssl3", "libffi8", "libbz2-1.0", "liblzma5", "libsqlite3-0", "libuuid1",
    "libncursesw6", "libtinfo6", "libreadline8", "libcrypt1", "libnsl2", "libtirpc3", "libdb5.3",
    "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libkrb5support0", "libcom-err2", "libkeyutils1",
)
PURE_TESTS = ("tests/spark/test_records_plan.py", "tests/spark/test_archive_layout.py")
PYTEST_PARTS = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py")


def sysroot(root: Path) -> Path:
    """``root`` holding Debian's arm64 python3.11 and its libraries (downloaded once)."""
    python = root / "usr" / "bin" / "python3.11"
    if python.exists():
        return python
    apt = root.parent / "arm64-apt"
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "status").touch()
    options = ["-o", "APT::Architecture=arm64", "-o", "APT::Architectures::=arm64",
               "-o", f"Dir::State::Lists={apt / 'lists'}", "-o", f"Dir::Cache={apt / 'cache'}",
               "-o", f"Dir::State::status={apt / 'status'}", "-o", "APT::Sandbox::User=root", "-q"]
    subprocess.run(["apt-get", *options, "update"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", *options, "download", *DEBIAN_PACKAGES], check=True, cwd=apt / "debs",
                   stdout=subprocess.DEVNULL)
    root.mkdir(parents=True, exist_ok=True)
    for deb in sorted((apt / "debs").glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    if not python.exists():
        raise SystemExit(f"no {python} after unpacking {len(DEBIAN_PACKAGES)} Debian packages: is apt's source "
                         "Debian 12 (bookworm, which has python3.11)?")
    return python


def emulated(path: Path, command: Path, root: Path, library_path: str = "") -> Path:
    """An executable script at ``path`` that runs the arm64 ``command`` under qemu with ``root`` as sysroot."""
    env = f" -E LD_LIBRARY_PATH={library_path}" if library_path else ""
    path.write_text(f'#!/bin/sh\nexec qemu-aarch64 -L {root}{env} {command} "$@"\n')
    path.chmod(0o755)
    return path


def platform_python_side(dest: Path) -> Path:
    """pyspark and py4j alone (what EMR puts on the path from SPARK_HOME/python), from .venv-emr or this venv."""
    dest.mkdir(parents=True, exist_ok=True)
    emr_site = ROOT / ".venv-emr" / "lib" / "python3.11" / "site-packages"
    for name in ("pyspark", "py4j"):
        found = emr_site / name if (emr_site / name).exists() else None
        if found is None:
            module = __import__(name)
            found = Path(module.__file__ or "").parent
        (dest / name).symlink_to(found)
    return dest


def run(root: Path, work: Path) -> list[str]:
    """Build, unpack and exercise the arm64 archive; the problems found (none: it works)."""
    if shutil.which("qemu-aarch64") is None:
        raise SystemExit("qemu-aarch64 is missing: apt-get install qemu-user (make emr-arm64 does)")
    python = sysroot(root)
    interpreter = emulated(work / "debian-python3.11", python, root)
    archive, manifest = emr_venv.build(work / "out", "aarch64", str(interpreter))
    print(f"built the arm64 archive with Debian's python3.11 copied in: {manifest['archive_bytes'] / 2**20:.1f} MiB")
    node = work / "node"  # where Spark unpacks spark.archives=...#environment
    (node / "environment").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(node / "environment", filter="tar")
    env_dir = node / "environment"
    node_python = emulated(node / "python", env_dir / "bin" / "python3.11", root, str(env_dir / "lib"))
    code = package.build_zip(node)
    spark = platform_python_side(node / "spark-python")
    found = imports.problems(imports.check(str(node_python), extra_code=(
        f"import sys; sys.path[:0] = [{str(code)!r}]; sys.path.append({str(spark)!r})\n")))
    print("import check on arm64: " + ("; ".join(found) if found else "every module the jobs load imports"))
    # the pure tests, from an unpacked bundle, with pytest (pure Python) and nothing else of this machine
    bundle = node / "bundle"
    with zipfile.ZipFile(code) as zf:
        zf.extractall(bundle)
    tests = bundle / "armtests"
    tests.mkdir()
    for test in PURE_TESTS:
        shutil.copyfile(ROOT / test, tests / Path(test).name)
    helpers = node / "pytest-only"
    helpers.mkdir()
    site = Path(__import__("pytest").__file__ or "").parents[1]
    for part in PYTEST_PARTS:
        if (site / part).exists():
            (helpers / part).symlink_to(site / part)
    done = subprocess.run([str(node_python), "-c", "import sys, pytest; sys.path.insert(0, '.'); sys.exit(pytest.main("
                           "['-q', '-p', 'no:cacheprovider', '-W', 'ignore::pytest.PytestConfigWarning', "
                           "'--rootdir', 'armtests', 'armtests']))"],
                          cwd=bundle, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(helpers)},
                          capture_output=True, text=True, timeout=600, check=False)
    print("pure tests on arm64: " + done.stdout.strip().splitlines()[-1])
    if done.returncode != 0:
        found.append(f"the pure tests failed on arm64:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="the arm64 sysroot (made once)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="metro-arm64-") as tmp:
        found = run(Path(args.root), Path(tmp))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
