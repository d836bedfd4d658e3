"""The Lambda runtime of Metro's functions, and the interpreter that packages for it.

The functions run on python3.12, on Amazon Linux 2023 (glibc 2.34; python3.11's Amazon Linux 2 is deprecated on
2027-06-30). ``chalice package`` picks the runtime, and the wheels it bundles, from the Python it runs on: it runs
from ``.venv-package``, a venv of Python 3.12 holding requirements.txt, chalice and the boto3 the Lambda runtime
provides (the Makefile builds it; ``LAMBDA_PY`` names the interpreter). The rehearsal's emulator runs the functions
with its own interpreter, so ``.venv-rehearse`` is a Python 3.12 venv too.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = "python3.12"
PYTHON_VERSION = "3.12"
ABI = "cp312"
PACKAGE_VENV = ROOT / ".venv-package"


def package_python() -> Path:
    """The packaging venv's interpreter (Python 3.12); FileNotFoundError says how to make it."""
    python = PACKAGE_VENV / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{python} is missing: `make deploy` (or `make {PACKAGE_VENV.name}`) builds it with "
                                f"Python {PYTHON_VERSION} (LAMBDA_PY=/path/to/python{PYTHON_VERSION})")
    return python


def chalice_package(stage: str, out: Path, region: str,
                    timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``chalice package --stage STAGE OUT`` for Lambda's runtime: sam.json and deployment.zip in ``out``."""
    chalice = package_python().parent / "chalice"
    env = {**os.environ, "AWS_DEFAULT_REGION": region}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(chalice), "package", "--stage", stage, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
