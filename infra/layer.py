"""The pyarrow Lambda layer: what the functions need to read a compacted body from the Parquet archive.

The deploy downloads pyarrow's wheel for Lambda's platform (Amazon Linux 2023, glibc 2.34: manylinux_2_28 x86_64,
CPython 3.12, infra/lambda_runtime.py),
keeps the modules reading Parquet needs (the core, compute, dataset, acero, parquet) and leaves out
what it does not (Flight, the Substrait and ORC modules, tests, C++ headers and Cython sources), so the layer and the
bundle stay well inside Lambda's 250 MB unzipped limit. The layer puts ``pyarrow`` under ``python/``,
which Lambda adds to ``sys.path`` (``/opt/python``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from infra import lambda_runtime

PACKAGES = ("pyarrow",)  # numpy is optional for pyarrow and chalicelib.store.archive does not use it
EXCLUDED = re.compile(
    r"(^|/)(tests|include|src)/"
    r"|\.(pxd|pxi|pyx|h|hpp|cc|cpp)$"
    r"|(^|/)(lib)?_?(arrow_)?(flight|orc|pyarrow_cpp_tests|python_flight)[^/]*$"
    r"|(^|/)_?substrait[^/]*$"  # the Python module only: libarrow_substrait is linked by pyarrow.lib
    r"|(^|/)_dataset_orc[^/]*$"
    r"|(^|/)__pycache__/"
)
# The pyarrow of requirements-dev.txt, which the Spark jobs write the archive with (tests/package/test_lambda_layer.py
# reads an archive file with this very wheel). Lambda's python3.12 runtime has glibc 2.34, so pyarrow's
# manylinux_2_28 wheels load there.
LAYER_PYARROW = "26.0.1"
LAMBDA_PLATFORM = ("--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
                   "--python-version", lambda_runtime.PYTHON_VERSION, "--implementation", "cp", "--only-binary=:all:")


def download(dest: Path, wheels: Path | None = None) -> Path:
    """Unpack the layer's pyarrow wheel for Lambda's platform into ``dest`` (a site-packages-like folder).

    The wheel is fetched into ``wheels`` (``dest/wheels`` by default) unless it is there already, so a kept
    folder downloads it once."""
    wheels = wheels or dest / "wheels"
    if not any(wheels.glob(f"pyarrow-{LAYER_PYARROW}-*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "5", "--timeout", "60",
                        "--dest", str(wheels), *LAMBDA_PLATFORM, f"pyarrow=={LAYER_PYARROW}"], check=True)
    site = dest / "site"
    for wheel in wheels.glob(f"pyarrow-{LAYER_PYARROW}-*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
    return site


def included(relative: str) -> bool:
    return not EXCLUDED.search(relative)


def build(site_packages: Path, out: Path, packages: tuple[str, ...] = PACKAGES) -> Path:
    """Zip the layer (``python/pyarrow/...``, or the ``packages`` given) from a folder holding the installed
    packages; reproducible."""
    files = sorted(
        p for package in packages for p in (site_packages / package).rglob("*")
        if p.is_file() and included(p.relative_to(site_packages).as_posix())
    )
    if not files:
        raise FileNotFoundError(f"no {packages} under {site_packages}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            info = zipfile.ZipInfo("python/" + path.relative_to(site_packages).as_posix(), (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return out


def unzipped_bytes(zip_path: Path) -> int:
    with zipfile.ZipFile(zip_path) as zf:
        return sum(i.file_size for i in zf.infolist())
