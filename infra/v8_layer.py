"""The JavaScript layer: V8 (mini-racer) for the transform function only, which runs the message transforms'
JavaScript (docs/transforms.md).

V8 is 82 MB unzipped: beside the bundle and the pyarrow layer it would take every function past 80 % of Lambda's
250 MB unzipped limit, so no other function carries it. The transform function gets this layer and not pyarrow's
(infra/template.py); the functions that publish or deliver invoke it (chalicelib/store/transformer.py).
mini-racer's wheel is ``py3-none-manylinux_2_27_x86_64``: it loads on Lambda's Amazon Linux 2023 (glibc 2.34).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from infra import layer

PACKAGES = ("py_mini_racer",)
LAYER_MINI_RACER = "0.14.1"  # the mini-racer of requirements-run.txt, which the local stack and the tests run


def download(dest: Path, wheels: Path | None = None) -> Path:
    """Unpack mini-racer's wheel for Lambda's platform into ``dest/site`` (downloaded into ``wheels`` once)."""
    wheels = wheels or dest / "wheels"
    pattern = f"mini_racer-{LAYER_MINI_RACER}-*.whl"
    if not any(wheels.glob(pattern)):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "5", "--timeout", "60",
                        "--dest", str(wheels), "--platform", "manylinux_2_27_x86_64", "--only-binary=:all:",
                        "--python-version", "3.12", f"mini-racer=={LAYER_MINI_RACER}"], check=True)
    site = dest / "site"
    for wheel in wheels.glob(pattern):
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():  # the wheel keeps its files under mini_racer-*.data/purelib/
                parts = Path(info.filename).parts
                if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
                    target = site.joinpath(*parts[2:])
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(info))
    return site


def build(site_packages: Path, out: Path) -> Path:
    """Zip the layer (``python/py_mini_racer/...``)."""
    return layer.build(site_packages, out, PACKAGES)
