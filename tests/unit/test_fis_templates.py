"""infra/fis.py: the stage's AWS FIS experiment templates are well formed (targets, durations, percentages), use
only the action ids and parameters checked against the AWS FIS actions reference, stop on alarms the app stack
defines, run with a role that allows exactly what their actions need, and pass cfn-lint as CloudFormation."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra import api_monitoring, fis, fis_iam, http_api, observability
from infra.names import FUNCTIONS, StageNames
from infra.template import FUNCTION_IDS

GRPC = fis.GrpcNetwork("vpc-0abc", ("subnet-0a", "subnet-0b"), "eu-west-1a")
ALL = fis.templates("dev", grpc=GRPC, reserved={"push": 40})
# The action ids, and each one's parameters, as the AWS FIS actions reference documents them
# (https://docs.aws.amazon.com/fis/latest/userguide/fis-actions-reference.html).
DOCUMENTED = {
    "aws:lambda:invocation-error": {"duration", "invocationPercentage", "preventExecution"},
    "aws:lambda:invocation-add-delay": {"duration", "invocationPercentage", "startupDelayMilliseconds"},
    "aws:ssm:start-automation-execution": {"documentArn", "documentVersion", "documentParameters", "maxDuration"},
    "aws:ecs:stop-task": set(),
    "aws:network:disrupt-connectivity": {"scope", "duration", "prefixListIdentifier"},
}
# What each action targets (None: no target) and the target parameters its resource type takes
RESOURCE_TYPES = {"aws:lambda:invocation-error": ("Functions", "aws:lambda:function"),
                  "aws:lambda:invocation-add-delay": ("Functions", "aws:lambda:function"),
                  "aws:ecs:stop-task": ("Tasks", "aws:ecs:task"),
                  "aws:network:disrupt-connectivity": ("Subnets", "aws:ec2:subnet")}
TARGET_PARAMETERS = {"aws:ec2:subnet": {"availabilityZoneIdentifier", "vpc"}, "aws:ecs:task": {"cluster", "service"}}
SCOPES = {"all", "availability-zone", "dynamodb", "prefix-list", "s3", "s3express", "vpc"}
ISO_DURATION = re.compile(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$")


def test_the_action_ids_are_the_ones_checked_against_the_reference() -> None:
    assert set(DOCUMENTED) == fis.ACTION_IDS
    assert fis.action_ids(ALL) == fis.ACTION_IDS


@pytest.mark.parametrize("name", sorted(ALL))
def test_actions_name_targets_the_template_defines_and_every_target_is_used(name: str) -> None:
    template = ALL[name]
    used = set()
    for action in template["actions"].values():
        expected = RESOURCE_TYPES.get(action["actionId"])
        if expected is None:
            assert "targets" not in action
            continue
        [(key, target)] = action["targets"].items()
        assert key == expected[0]
        assert template["targets"][target]["resourceType"] == expected[1]
        used.add(target)
    assert used == set(template["targets"])
    for target in template["targets"].values():
        assert target["selectionMode"] == "ALL" or re.fullmatch(r"COUNT\(\d+\)|PERCENT\(\d+\)",
                                                                 target["selectionMode"])
        assert set(target.get("parameters", {})) <= TARGET_PARAMETERS.get(target["resourceType"], set())
        assert target.get("resourceArns") or target.get("parameters")


@pytest.mark.parametrize("name", sorted(ALL))
def test_parameters_are_documented_durations_iso_and_numbers_in_range(name: str) -> None:
    for action in ALL[name]["actions"].values():
        params = action.get("parameters", {})
        assert set(params) <= DOCUMENTED[action["actionId"]]
        assert all(isinstance(v, str) for v in params.values())  # FIS takes strings only
        for key in ("duration", "maxDuration"):
            if key in params:
                found = ISO_DURATION.match(params[key])
                assert found and any(found.groups()), params[key]
                h, m, s = (int(g or 0) for g in found.groups())
                assert 60 <= h * 3600 + m * 60 + s <= 12 * 3600
        if "invocationPercentage" in params:
            assert 1 <= int(params["invocationPercentage"]) <= 100
        if "startupDelayMilliseconds" in params:
            assert 0 <= int(params["startupDelayMilliseconds"]) <= 900_000
        if "preventExecution" in params:
            assert params["preventExecution"] in ("true", "false")
        if "scope" in params:
            assert params["scope"] in SCOPES
        if "documentParameters" in params:
            doc = json.loads(params["documentParameters"])
            assert all(isinstance(v, str) for v in doc.values())
            assert set(doc) <= set(fis_iam.throttle_runbook(StageNames("dev"))["parameters"])


def test_out_of_range_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        fis.templates("dev", percent=0)
    with pytest.raises(ValueError):
        fis.templates("dev", delay_ms=900_001)
    with pytest.raises(ValueError):
        fis.templates("dev", grpc=fis.GrpcNetwork("vpc-1", (), "eu-west-1a"))


def _alarm_names(front_door: str) -> set[str]:
    """The alarm names infra/observability.py gives a stage (on a template of the packaged one's shape)."""
    names = StageNames("dev")
    resources: dict[str, Any] = {
        FUNCTION_IDS[f]: {"Type": "AWS::Serverless::Function", "Properties": {"FunctionName": names.function(f)}}
        for f in FUNCTIONS}
    if front_door == "http":
        for api in http_api.APIS:
            resources[api] = {"Type": "AWS::ApiGatewayV2::Api", "Properties": {}}
            resources[http_api.stage_id(api)] = {"Type": "AWS::ApiGatewayV2::Stage", "Properties": {}}
    else:
        for api in api_monitoring.REST_APIS:
            resources[api] = {"Type": "AWS::Serverless::Api", "Properties": {"StageName": "dev"}}
    out = {"Resources": resources, "Outputs": {}}
    observability.add(out, "dev")
    return {r["Properties"]["AlarmName"] for r in out["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"}


@pytest.mark.parametrize("front_door", ["http", "rest"])
def test_every_experiment_stops_on_alarms_the_app_stack_defines(front_door: str) -> None:
    defined = _alarm_names(front_door)
    assert set(fis.stop_alarms(StageNames("dev")).values()) <= defined
    for template in ALL.values():
        assert template["stopConditions"]
        for stop in template["stopConditions"]:
            assert stop["source"] == "aws:cloudwatch:alarm"
            prefix = "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:"
            assert stop["value"].startswith(prefix) and stop["value"].removeprefix(prefix) in defined


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {a for st in statements for a in st["Action"]}


@pytest.mark.parametrize("grpc", [GRPC, None], ids=["with-grpc", "lambda-only"])
def test_the_fis_role_allows_exactly_what_the_actions_need(grpc: fis.GrpcNetwork | None) -> None:
    found = fis.templates("dev", grpc=grpc)
    resources = fis.support_resources("dev", found)
    [policy] = resources["FisRole"]["Properties"]["Policies"]
    statements = policy["PolicyDocument"]["Statement"]
    needed = {p for a in fis.action_ids(found) for p in fis_iam.PERMISSIONS[a]}
    assert _actions(statements) == needed
    assert all("*" not in a for a in _actions(statements))
    assert all(st["Effect"] == "Allow" for st in statements)
    # "*" only for what has no resource type
    resourceless = {"tag:GetResources", "ec2:DescribeManagedPrefixLists", "ec2:DescribeNetworkAcls",
                    "ec2:DescribeSubnets", "ec2:DescribeVpcs", "ecs:ListTasks"}
    for st in statements:
        if "*" in st["Resource"]:
            assert set(st["Action"]) <= resourceless, st["Sid"]
    if grpc is None:
        assert not any(a.startswith(("ec2:", "ecs:")) for a in _actions(statements))


def test_the_lambda_actions_reach_only_the_targeted_functions_and_the_config_prefix() -> None:
    names = StageNames("dev")
    statements = fis_iam.fis_role_statements(names, {"aws:lambda:invocation-error"}, ["push"])
    by_sid = {st["Sid"]: st for st in statements}
    assert by_sid["TargetFunctions"]["Resource"] == [fis_iam.function_arn(names, "push")]
    assert by_sid["ExtensionConfiguration"]["Resource"] == [fis_iam.config_location(names) + "*"]
    assert fis.lambda_functions(ALL) == sorted(set(fis.FAILING) | set(fis.PAUSED))


def test_the_throttle_runbook_restores_on_failure_and_cancel() -> None:
    names = StageNames("dev")
    steps = {s["name"]: s for s in fis_iam.throttle_runbook(names)["mainSteps"]}
    assert steps["Throttle"]["inputs"]["ReservedConcurrentExecutions"] == 0
    for name in ("Throttle", "Hold"):
        assert steps[name]["onFailure"] == steps[name]["onCancel"] == "step:Restore"
    choices = steps["Restore"]["inputs"]
    assert {c["NextStep"] for c in choices["Choices"]} | {choices["Default"]} == {"RemoveReservation",
                                                                                   "PutReservationBack"}
    assert steps["PutReservationBack"]["isEnd"] and steps["RemoveReservation"]["isEnd"]
    role = fis_iam.automation_role(names, list(fis.THROTTLED))
    [statement] = role["Policies"][0]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["lambda:DeleteFunctionConcurrency", "lambda:PutFunctionConcurrency"]
    assert statement["Resource"] == [fis_iam.function_arn(names, f) for f in sorted(fis.THROTTLED)]
    params = {json.loads(a["parameters"]["documentParameters"])["FunctionName"]:
              json.loads(a["parameters"]["documentParameters"])["RestoreConcurrency"]
              for a in ALL["lambda-throttle"]["actions"].values()}
    assert params == {names.function("push"): "40", names.function("fanout"): "-1"}


def test_without_the_grpc_edge_its_experiments_are_left_out() -> None:
    assert not any(name.startswith("grpc-") for name in fis.templates("dev"))
    assert {"grpc-task-stop", "grpc-az-loss", "grpc-dynamodb-unreachable", "grpc-s3-unreachable"} <= set(ALL)


def test_written_files_are_resolved_for_the_account_and_region(tmp_path: Path) -> None:
    written = fis.write(tmp_path, "dev", "123456789012", "eu-west-1", grpc=GRPC)
    assert {p.name for p in written} == {f"{n}.json" for n in ALL} | {"support.json", "stack.json"}
    for name in ALL:
        text = (tmp_path / f"{name}.json").read_text()
        assert "${AWS::" not in text and "arn:aws:iam::123456789012:role/metro-dev-fis" in text
        assert set(json.loads(text)) == {"description", "targets", "actions", "stopConditions", "roleArn", "tags",
                                         "experimentOptions"}
    support = json.loads((tmp_path / "support.json").read_text())["Resources"]
    assert not any(r["Type"] == "AWS::FIS::ExperimentTemplate" for r in support.values())


def test_cfn_lint_is_clean_on_the_stack(tmp_path: Path) -> None:
    exe = shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("cfn-lint is not installed (requirements-dev.txt pins it)")
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(fis.stack("dev", ALL)))
    done = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    resources = json.loads(path.read_text())["Resources"]
    experiments = [r for r in resources.values() if r["Type"] == "AWS::FIS::ExperimentTemplate"]
    assert len(experiments) == len(ALL)
