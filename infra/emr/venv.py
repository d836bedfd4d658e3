"""The Python environment of the EMR Serverless jobs: exactly infra/emr/requirements-emr.txt, as a venv-pack style
archive that Spark unpacks as ``./environment`` on the driver and every executor.

    python -m infra.emr.venv [--out dist/emr] [--arch aarch64] [--interpreter /usr/bin/python3.11]

The jobs run with (``serverless.venv_conf``, EMR Serverless's documented way)::

    spark.archives=s3://.../venv.tar.gz#environment
    spark.emr-serverless.driverEnv.PYSPARK_PYTHON=./environment/bin/python
    spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python

Packages: ``pip install --target <env>/lib/python3.11/site-packages --platform manylinux_2_28_<arch>
--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 -r requirements-emr.txt``. Wheels only,
so nothing is compiled for the build machine: this runs on any machine (x86_64 included) and yields the arm64
packages. Every pin has a manylinux aarch64 wheel for CPython 3.11 (glibc 2.28 at most: EMR 7 runs Amazon
Linux 2023, glibc 2.34).

The interpreter is the part a wheel cannot bring. Two layouts:

* ``--interpreter PATH`` (the one to deploy): the interpreter, its standard library and its libpython are copied
  into the archive (what AWS's "different Python versions" tutorial does with a Python built from source), and
  ``bin/python`` is a small launcher that puts the archive's ``lib/`` on the library path. PATH must be a CPython
  3.11 for the target architecture, run here to find its files, so this needs an arm64 Linux builder: a Graviton
  machine or CodeBuild arm64 image with Amazon Linux 2023 (``dnf install -y python3.11``), or
  ``docker run --platform linux/arm64 public.ecr.aws/amazonlinux/amazonlinux:2023``. The system libraries
  python3.11 links to (OpenSSL 3, libffi, expat, zlib, ...) are those of EMR 7's own Python 3.9 on the same
  Amazon Linux 2023, so they are on the workers.
* no ``--interpreter``: ``bin/python`` is a symlink to ``/usr/bin/python3.11`` with a ``pyvenv.cfg``, exactly what
  venv-pack makes of a venv created by ``/usr/bin/python3.11 -m venv``. It runs only where that interpreter
  exists: the EC2 cluster after infra/emr/bootstrap.sh, or a custom EMR Serverless image that installs
  python3.11. EMR Serverless 7's stock image has Python 3.9 only (chalicelib needs 3.11), so
  ``serverless deploy`` refuses such an archive unless told otherwise.

``metro-venv.json`` (in the archive and beside it) records the architecture, the interpreter layout and the pins.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "infra" / "emr" / "requirements-emr.txt"
PYTHON_VERSION = "3.11"  # chalicelib's Python; EMR 7's own is 3.9
SYSTEM_PYTHON = "/usr/bin/python3.11"  # Amazon Linux 2023's python3.11 package
ARCHIVE = "venv.tar.gz"
MANIFEST = "metro-venv.json"
# glibc 2.28 at most (pyarrow's and numpy's aarch64 wheels need it); Amazon Linux 2023 has 2.34
PLATFORMS = ("manylinux_2_28_{arch}", "manylinux_2_27_{arch}", "manylinux2014_{arch}")
# not needed by the jobs: left out of a copied standard library
STDLIB_SKIP = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip",
               "lib2to3", "__pycache__", "config-3.11-x86_64-linux-gnu", "config-3.11-aarch64-linux-gnu"}
SITECUSTOMIZE = """# infra/emr/venv.py: the archive's own packages, beside this standard library
import os as _os
import site as _site
import sys as _sys

_site.addsitedir(_os.path.join(_sys.prefix, "lib", "python{version}", "site-packages"))
"""
LAUNCHER = """#!/bin/sh
# The archive's own CPython {version}: its libpython is in ../lib (infra/emr/venv.py)
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$here/../lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$here/python{version}" "$@"
"""


def pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """``{normalized name: version}`` of requirements-emr.txt (every line ``name==version``)."""
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version:
            raise ValueError(f"{path.name}: not pinned with ==: {raw!r}")
        out[normalize(name)] = version.strip()
    return out


DIRECT_SECTION = "# imported by the jobs"


def direct_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """The pins of the first section: the distributions whose modules the jobs import themselves."""
    rest = path.read_text().partition(DIRECT_SECTION)[2]
    section = rest.split("\n#", 1)[0]
    out = {}
    for line in section.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            out[normalize(name)] = version
    return out


def normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def pip_install_command(target: Path, arch: str, requirements: Path = REQUIREMENTS,
                        python_version: str = PYTHON_VERSION) -> list[str]:
    abi = "cp" + python_version.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
           "--target", str(target), "--only-binary=:all:", "--python-version", python_version,
           "--implementation", "cp", "--abi", abi]
    for platform in PLATFORMS:
        cmd += ["--platform", platform.format(arch=arch)]
    return [*cmd, "-r", str(requirements)]


def installed(site: Path) -> dict[str, str]:
    """``{normalized name: version}`` of the distributions in ``site`` (their .dist-info folders)."""
    out = {}
    for info in site.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].rpartition("-")
        out[normalize(name)] = version
    return out


def _interpreter_facts(interpreter: str) -> dict[str, Any]:
    code = ("import json, sys, sysconfig, platform; v = sysconfig.get_config_var; print(json.dumps({"
            "'version': '%d.%d' % sys.version_info[:2], 'machine': platform.machine(), "
            "'executable': sys.executable, 'platlibdir': getattr(sys, 'platlibdir', 'lib'), "
            "'stdlib': sysconfig.get_paths()['stdlib'], 'platstdlib': sysconfig.get_paths()['platstdlib'], "
            "'shared': bool(v('Py_ENABLE_SHARED')), 'libdir': v('LIBDIR'), 'soname': v('INSTSONAME') or ''}))")
    done = subprocess.run([interpreter, "-I", "-c", code], capture_output=True, text=True, check=True)
    facts: dict[str, Any] = json.loads(done.stdout)
    return facts


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if n in STDLIB_SKIP or n.endswith(".pyc")])


def bundle_interpreter(env: Path, interpreter: str, arch: str, python_version: str = PYTHON_VERSION) -> dict[str, Any]:
    """Copy ``interpreter`` (binary, standard library, libpython) into ``env``; ``bin/python`` launches it."""
    facts = _interpreter_facts(interpreter)
    if facts["version"] != python_version:
        raise SystemExit(f"{interpreter} is Python {facts['version']}, the jobs need {python_version}")
    if facts["machine"] != arch:
        raise SystemExit(f"{interpreter} runs on {facts['machine']}, the archive is for {arch}: build on an {arch} "
                         "machine (see infra/emr/venv.py)")
    binary = Path(os.path.realpath(facts["executable"]))
    stdlib_dst = env / facts["platlibdir"] / f"python{python_version}"  # where getpath looks for os.py
    for src in dict.fromkeys([facts["stdlib"], facts["platstdlib"]]):
        _copy_tree(Path(src), stdlib_dst)
    # the archive's packages whatever the distribution's site.py looks for (Debian's: dist-packages)
    custom = stdlib_dst / "sitecustomize.py"
    custom.unlink(missing_ok=True)  # Debian's is a symlink into /etc
    custom.write_text(SITECUSTOMIZE.format(version=python_version))
    (env / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, env / "bin" / f"python{python_version}")
    # a binary linked to libpython names it in its dynamic section (Amazon Linux's does; Debian's is static)
    needs_libpython = bool(facts["shared"] and facts["soname"]) and facts["soname"].encode() in binary.read_bytes()
    if needs_libpython:
        libpython = Path(facts["libdir"]) / facts["soname"]
        if not libpython.is_file():
            raise SystemExit(f"{binary} needs {facts['soname']}, not found in {facts['libdir']}")
        (env / "lib").mkdir(exist_ok=True)
        shutil.copy2(libpython, env / "lib" / facts["soname"])
    launcher = env / "bin" / "python"
    launcher.write_text(LAUNCHER.format(version=python_version))
    launcher.chmod(0o755)
    (env / "bin" / "python3").symlink_to("python")
    return {"interpreter": "bundled", "from": str(binary), "shared_libpython": needs_libpython}


def link_system_interpreter(env: Path, python_version: str = PYTHON_VERSION,
                            system_python: str = SYSTEM_PYTHON) -> dict[str, Any]:
    """venv-pack's layout for a venv of ``system_python``: symlinks to it and a ``pyvenv.cfg``."""
    bin_dir = env / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / f"python{python_version}").symlink_to(system_python)
    (bin_dir / "python3").symlink_to(f"python{python_version}")
    (bin_dir / "python").symlink_to(f"python{python_version}")
    (env / "pyvenv.cfg").write_text(f"home = {Path(system_python).parent}\ninclude-system-site-packages = false\n"
                                    f"version = {python_version}\n")
    return {"interpreter": "system", "from": system_python}


def _tar_filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 1577836800  # 2020-01-01: the same inputs give the same archive
    return info


def write_archive(env: Path, target: Path) -> Path:
    """``target`` (.tar.gz) holding ``env``'s contents at its root, symlinks kept, sorted, fixed times."""
    import gzip

    paths = sorted(env.rglob("*"))
    with open(target, "wb") as raw, \
            gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in paths:
            tar.add(path, arcname=str(path.relative_to(env)), recursive=False, filter=_tar_filter)
    return target


def build(out: Path, arch: str = "aarch64", interpreter: str = "", requirements: Path = REQUIREMENTS,
          python_version: str = PYTHON_VERSION) -> tuple[Path, dict[str, Any]]:
    """Build ``out/venv.tar.gz`` and ``out/metro-venv.json``; return the archive and the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    wanted = pins(requirements)
    with tempfile.TemporaryDirectory(prefix="metro-emr-venv-") as tmp:
        env = Path(tmp) / "environment"
        site = env / "lib" / f"python{python_version}" / "site-packages"
        subprocess.run(pip_install_command(site, arch, requirements, python_version), check=True)
        got = installed(site)
        if got != wanted:
            raise SystemExit(f"the environment is not exactly {requirements.name}: installed {sorted(got.items())}, "
                             f"pinned {sorted(wanted.items())}")
        for cache in site.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        layout = (bundle_interpreter(env, interpreter, arch, python_version) if interpreter
                  else link_system_interpreter(env, python_version))
        manifest = {"python": python_version, "arch": arch, **layout, "requirements": wanted}
        (env / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        shutil.copyfile(env / MANIFEST, out / MANIFEST)
        archive = write_archive(env, out / ARCHIVE)
    manifest["archive_bytes"] = archive.stat().st_size
    return archive, manifest


def read_manifest(archive: Path) -> dict[str, Any]:
    with tarfile.open(archive, "r:gz") as tar:
        member = tar.extractfile(MANIFEST)
        if member is None:
            raise ValueError(f"{archive} has no {MANIFEST}")
        doc: dict[str, Any] = json.load(io.TextIOWrapper(member))
        return doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "dist" / "emr"))
    p.add_argument("--arch", default="aarch64", choices=("aarch64", "x86_64"))
    p.add_argument("--interpreter", default="", help="a CPython 3.11 for --arch to copy into the archive")
    args = p.parse_args(argv)
    archive, manifest = build(Path(args.out), args.arch, args.interpreter)
    print(f"built {archive} ({manifest['archive_bytes'] / 2**20:.1f} MiB): {args.arch}, Python {manifest['python']}, "
          f"interpreter {manifest['interpreter']} ({manifest['from']}), {len(manifest['requirements'])} distributions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
