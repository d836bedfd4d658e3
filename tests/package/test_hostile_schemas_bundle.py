"""The deployed bundle carries RE2: ``chalice package`` of the dev stage puts google-re2's wheel for Lambda's
platform into deployment.zip, and JSON Schema patterns compile from the bundle alone."""

from __future__ import annotations

import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from infra import lambda_runtime
from tests.package.packaged import packaged_bundle

# -I -S: no site-packages, so every module comes from the unpacked bundle.
COMPILE_FROM_THE_BUNDLE = """
import sys
sys.path[:0] = [sys.argv[1]]
import re2
from chalicelib.core.schemas.json_schema import JsonSchema
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid
schema = JsonSchema('{"pattern": "^(a+)+$"}')
try:
    schema.check_json(b'"' + b"a" * 100000 + b'!"')
except MessageInvalid:
    pass
try:
    JsonSchema('{"pattern": "(a)\\\\\\\\1"}')
except DefinitionInvalid:
    print(re2.__file__)
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the bundle's wheels run here only on Lambda's platform (linux x86_64)")
    task = tmp_path_factory.mktemp("bundle")
    with zipfile.ZipFile(packaged_bundle()) as zf:
        zf.extractall(task)
    return task


def test_the_bundle_compiles_json_schema_patterns_with_its_own_re2(bundle: Path) -> None:
    assert [p.name for p in (bundle / "re2").glob("_re2.cpython-312-x86_64-linux-gnu.so")]
    python = str(lambda_runtime.package_python())
    done = subprocess.run([python, "-I", "-S", "-c", COMPILE_FROM_THE_BUNDLE, str(bundle)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith(str(bundle / "re2")), done.stdout
