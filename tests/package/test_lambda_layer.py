"""pyarrow in the deployed functions: the layer built by infra/layer.py, imported next to the packaged bundle
the way Lambda lays them out (the bundle at the task root, the layer's ``python/`` on ``sys.path``)."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from infra import lambda_runtime, layer, template
from tests.package.packaged import packaged_bundle, packaged_template

LAMBDA_UNZIPPED_LIMIT = 250 * 1000 * 1000
ROOT = Path(__file__).resolve().parents[2]
WHEEL_CACHE = ROOT / ".metro" / "cache" / "layer-wheels"

# Run with Lambda's Python (the packaging venv's) and -I -S: no site-packages, so pyarrow and chalicelib come only
# from the two folders given. It ends with os._exit, as a Lambda runtime process is frozen and killed, never
# finalized.
READ_ARCHIVE = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import pyarrow as pa, pyarrow.compute as pc
from chalicelib.store import archive
rows = [{"message_id": "m1", "publish_time": 0, "ordering_key": "", "attributes": [("a", "1")], "data": b"x",
         "raw_key": "k", "request_id": "r"}]
table = archive.parquet_to_table(archive.table_to_parquet(pa.Table.from_pylist(rows, schema=archive.arrow_schema())))
table = table.filter(pc.is_in(table["message_id"], value_set=pa.array(["m1"])))
print(pa.__file__, table.to_pylist()[0]["data"], flush=True)
import os
os._exit(0)
"""


@pytest.fixture(scope="module")
def layer_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel the deploy puts in the layer, downloaded for Lambda's platform as the deploy does it."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the layer's wheel runs here only on Lambda's platform (linux x86_64)")
    packaged_bundle()  # skips where chalice package cannot fetch its wheels (offline): so would this download
    try:  # the wheel (about 40 MB) is kept under .metro/ so that a network hiccup fails at most the first run
        return layer.download(tmp_path_factory.mktemp("layer"), WHEEL_CACHE)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"pyarrow {layer.LAYER_PYARROW}'s wheel for Lambda could not be downloaded (offline?): {exc}")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory, layer_site: Path) -> tuple[Path, Path, Path]:
    """(the bundle unpacked, the layer unpacked, the layer zip)."""
    root = tmp_path_factory.mktemp("lambda")
    layer_zip = layer.build(layer_site, root / "pyarrow-layer.zip")
    task, opt = root / "task", root / "opt"
    with zipfile.ZipFile(packaged_bundle()) as zf:
        zf.extractall(task)
    with zipfile.ZipFile(layer_zip) as zf:
        zf.extractall(opt)
    return task, opt / "python", layer_zip


def run_isolated(task: Path, extra: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(lambda_runtime.package_python()), "-I", "-S", "-c", READ_ARCHIVE, str(task), str(extra)],
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_bundle_reads_the_archive_with_the_layer_and_not_without(artifact: tuple[Path, Path, Path]) -> None:
    task, opt_python, _ = artifact
    with_layer = run_isolated(task, opt_python)
    assert with_layer.returncode == 0, with_layer.stderr
    assert with_layer.stdout.startswith(str(opt_python)) and with_layer.stdout.strip().endswith("b'x'")
    without = run_isolated(task, task)  # the control: the bundle alone has no pyarrow
    assert without.returncode != 0 and "No module named 'pyarrow'" in without.stderr


def test_bundle_and_layer_fit_lambdas_unzipped_limit(artifact: tuple[Path, Path, Path]) -> None:
    _, _, layer_zip = artifact
    total = layer.unzipped_bytes(packaged_bundle()) + layer.unzipped_bytes(layer_zip)
    assert total < LAMBDA_UNZIPPED_LIMIT * 0.8, total
    names = zipfile.ZipFile(layer_zip).namelist()
    assert all(n.startswith("python/pyarrow/") for n in names)
    assert not [n for n in names if "flight" in n or "/tests/" in n or n.endswith(".pyx")]


def test_every_function_but_transform_gets_the_layer() -> None:
    settings = template.Settings("dev", "b", "deploy/dev/app.zip", layer_key="deploy/dev/layer.zip")
    merged = template.merge(packaged_template(), settings)
    layer_resource = merged["Resources"][template.LAYER_ID]["Properties"]
    assert layer_resource["Content"] == {"S3Bucket": "b", "S3Key": "deploy/dev/layer.zip"}
    assert layer_resource["CompatibleRuntimes"] == ["python3.12"]
    for logical_id in template.FUNCTION_IDS.values():  # chalice packaged every function for that runtime
        assert merged["Resources"][logical_id]["Properties"]["Runtime"] == "python3.12"
    with_pyarrow = [i for f, i in template.FUNCTION_IDS.items() if f not in template.WITHOUT_PYARROW]
    for logical_id in with_pyarrow:
        assert merged["Resources"][logical_id]["Properties"]["Layers"] == [{"Ref": template.LAYER_ID}]
    assert json.dumps(merged).count("PyarrowLayer") == 1 + len(with_pyarrow)


def test_the_layer_wheel_is_the_archives_pyarrow_for_lambdas_amazon_linux_2023(layer_site: Path) -> None:
    """Lambda's python3.12 runtime has glibc 2.34: a manylinux_2_28 wheel of CPython 3.12 loads there, and it is the
    pyarrow the Spark jobs write the archive with."""
    [wheel] = WHEEL_CACHE.glob(f"pyarrow-{layer.LAYER_PYARROW}-*.whl")
    assert wheel.name.startswith(f"pyarrow-{layer.LAYER_PYARROW}-cp312-cp312-")
    assert re.search(r"manylinux_2_(1[7-9]|2[0-8])_x86_64", wheel.name), wheel.name
    dev_pin = re.search(r"^pyarrow==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert dev_pin and dev_pin.group(1) == layer.LAYER_PYARROW
