"""V8 in the deployed transform function: the layer built by infra/v8_layer.py, imported next to the packaged bundle
the way Lambda lays them out, with Lambda's Python and nothing else on ``sys.path``."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from infra import lambda_runtime, layer, template, v8_layer
from tests.package.packaged import packaged_bundle, packaged_template
from tests.package.test_lambda_layer import LAMBDA_UNZIPPED_LIMIT

ROOT = Path(__file__).resolve().parents[2]
WHEEL_CACHE = ROOT / ".metro" / "cache" / "v8-layer-wheels"

# What the transform function's handler runs (delivery/event_handlers.transform: the engine over one batch), with the
# bundle at the task root and the layer's ``python/`` on sys.path (-I -S: no site-packages; Lambda's runtime would
# add boto3, which the engine does not use).
RUN_TRANSFORM = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from chalicelib.core import transforms
print(json.dumps(transforms.run_batch(transforms.Limits(), json.loads(sys.argv[3]))), flush=True)
import os
os._exit(0)
"""
EVENT = {"transforms": [{"javascriptUdf": {"functionName": "up", "code": "function up(message, metadata) {"
                                                                       " return {data: message.data.toUpperCase(),"
                                                                       " attributes: {id: metadata.message_id}}; }"}}],
         "messages": [{"data": "aGk=", "attributes": {}, "messageId": "7", "publishTime": "2026-11-27T00:00:00Z",
                       "orderingKey": ""}]}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the bundle unpacked, the layer's python/ unpacked, the layer zip)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the layer's wheel runs here only on Lambda's platform (linux x86_64)")
    bundle = packaged_bundle()
    root = tmp_path_factory.mktemp("v8")
    try:
        site = v8_layer.download(root / "layer", WHEEL_CACHE)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"mini-racer {v8_layer.LAYER_MINI_RACER}'s wheel could not be downloaded (offline?): {exc}")
    layer_zip = v8_layer.build(site, root / "javascript-layer.zip")
    task, opt = root / "task", root / "opt"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(task)
    with zipfile.ZipFile(layer_zip) as zf:
        zf.extractall(opt)
    return task, opt / "python", layer_zip


def _run(task: Path, extra: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(lambda_runtime.package_python()), "-I", "-S", "-c", RUN_TRANSFORM, str(task),
                           str(extra), json.dumps(EVENT)], capture_output=True, text=True, timeout=120, check=False)


def test_the_transform_function_runs_javascript_with_the_layer_and_not_without(
        artifact: tuple[Path, Path, Path]) -> None:
    task, opt_python, _ = artifact
    ran = _run(task, opt_python)
    assert ran.returncode == 0, ran.stderr
    [result] = json.loads(ran.stdout)["results"]
    assert result == {"data": "SEk=", "attributes": {"id": "7"}}  # "HI"
    without = _run(task, task)  # the control: the bundle alone has no V8
    assert without.returncode != 0 and "py_mini_racer" in without.stderr


def test_bundle_and_javascript_layer_fit_lambdas_unzipped_limit(artifact: tuple[Path, Path, Path]) -> None:
    _, _, layer_zip = artifact
    total = layer.unzipped_bytes(packaged_bundle()) + layer.unzipped_bytes(layer_zip)
    assert total < LAMBDA_UNZIPPED_LIMIT * 0.8, total
    assert all(n.startswith("python/py_mini_racer/") for n in zipfile.ZipFile(layer_zip).namelist())


def test_only_the_transform_function_gets_v8_and_it_alone_goes_without_pyarrow() -> None:
    settings = template.Settings("dev", "b", "deploy/dev/app.zip", layer_key="deploy/dev/layer.zip",
                                 v8_layer_key="deploy/dev/v8.zip")
    resources = template.merge(packaged_template(), settings)["Resources"]
    assert resources[template.V8_LAYER_ID]["Properties"]["Content"] == {"S3Bucket": "b", "S3Key": "deploy/dev/v8.zip"}
    for function, logical_id in template.FUNCTION_IDS.items():
        layers = resources[logical_id]["Properties"]["Layers"]
        expected = [{"Ref": template.V8_LAYER_ID}] if function == "transform" else [{"Ref": template.LAYER_ID}]
        assert layers == expected, function
