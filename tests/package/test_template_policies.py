"""Policy as code over the merged app template (infra/policy_check.py: the SAM transform, then checkov with Metro's
rules of infra/checkov_rules/), in the venv ``.venv-checkov`` that ``make test`` and ``make package-tests``
install: the deployed template passes every rule, and a template that breaks each rule once fails exactly there."""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from infra import policy_check, template
from tests.package.packaged import packaged_template
from tests.package.test_app_template import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
CHECKOV_PYTHON = ROOT / ".venv-checkov" / "bin" / "python"


def broken(merged: dict[str, Any]) -> dict[str, Any]:
    """``merged`` (behind REST APIs, whose stages both API rules look at) with each rule broken once."""
    out = copy.deepcopy(merged)
    resources = out["Resources"]
    resources["Push"]["Properties"]["Tracing"] = "PassThrough"  # Chalice's own setting
    del resources["PushLogGroup"]["Properties"]["RetentionInDays"]
    del resources["StuckSeekAlarm"]["Properties"]["AlarmActions"]
    del resources["Dashboard"], out["Outputs"]["DashboardURL"]
    del resources["AmsRestAPI"]["Properties"]["AccessLogSetting"]
    resources["RestAPI"]["Properties"]["TracingEnabled"] = False
    resources["Maintenance"]["DependsOn"] = []
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not CHECKOV_PYTHON.exists():
        pytest.skip("no .venv-checkov: `make package-tests` (or `make test`) installs it (requirements-checkov.txt)")
    packaged = packaged_template()
    merged, rest = template.merge(packaged, SETTINGS), template.merge(packaged, replace(SETTINGS, front_door="rest"))
    workdir = tmp_path_factory.mktemp("policies")
    (workdir / "deployed.json").write_text(json.dumps(merged))
    (workdir / "deployed-rest.json").write_text(json.dumps(rest))
    (workdir / "broken.json").write_text(json.dumps(broken(rest)))
    done = subprocess.run([str(CHECKOV_PYTHON), "-m", "infra.policy_check", str(workdir / "deployed.json"),
                           str(workdir / "deployed-rest.json"), str(workdir / "broken.json")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr[-2000:]  # the broken template fails
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_deployed_template_passes_every_rule(report: dict[str, Any]) -> None:
    assert [f for f in report["failed"] if f["file"] in ("deployed.json", "deployed-rest.json")] == []
    assert set(report["passed"]) == set(policy_check.CHECK_IDS)  # every rule looked at something


def test_each_broken_rule_is_caught_where_it_is_broken(report: dict[str, Any]) -> None:
    failed = {(f["check_id"], f["resource"]) for f in report["failed"] if f["file"] == "broken.json"}
    functions = {f"AWS::Lambda::Function.{i}" for i in template.FUNCTION_IDS.values()}
    assert failed == {
        ("CKV_METRO_1", "AWS::Lambda::Function.Push"),  # tracing
        ("CKV_METRO_2", "AWS::Logs::LogGroup.PushLogGroup"),  # retention
        ("CKV_METRO_3", "AWS::CloudWatch::Alarm.StuckSeekAlarm"),  # an alarm without an action
        ("CKV_METRO_4", "AWS::ApiGateway::Stage.AmsRestAPIdevStage"),  # access logs
        ("CKV_METRO_5", "AWS::ApiGateway::Stage.RestAPIdevStage"),  # stage tracing
        ("CKV2_METRO_2", "AWS::Lambda::Function.Maintenance"),  # a function without its log group
        *(("CKV2_METRO_1", f) for f in functions),  # no dashboard: no function is on one
    }
