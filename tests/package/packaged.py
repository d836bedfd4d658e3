"""``chalice package`` of the dev stage, run once per test session (skipped where it cannot build offline)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from infra import lambda_runtime

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _package() -> tuple[dict[str, Any] | None, str, Path]:
    out = Path(tempfile.mkdtemp(prefix="metro-package-test-"))
    try:
        done = lambda_runtime.chalice_package("dev", out, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"), 300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"chalice package could not run here: {exc}", out
    if done.returncode != 0:  # it needs the dependency wheels: offline without a cache it cannot build
        return None, f"chalice package failed (offline?): {done.stderr[-500:]}", out
    return json.loads((out / "sam.json").read_text()), "", out


def packaged_template() -> dict[str, Any]:
    """The SAM template of the dev stage (a fresh copy each call)."""
    found, why, _ = _package()
    if found is None:
        pytest.skip(why)
    return json.loads(json.dumps(found))


def packaged_bundle() -> Path:
    """The bundle (``deployment.zip``) the dev stage deploys."""
    found, why, out = _package()
    if found is None:
        pytest.skip(why)
    return out / "deployment.zip"
