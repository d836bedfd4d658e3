"""AWS Fault Injection Service (FIS) experiment templates of a stage: the deployed counterpart of ``make chaos``.

    python -m infra.fis --stage dev --account 123456789012 --region eu-west-1 --out build/fis \\
        [--reserved push=40] [--grpc-vpc vpc-1 --grpc-subnets subnet-a,subnet-b --grpc-az eu-west-1a]

writes one ``<name>.json`` per experiment (for ``aws fis create-experiment-template --cli-input-json``),
``support.json`` (a CloudFormation template of what they need: the FIS role, the throttle runbook and its role) and
``stack.json`` (the same with the experiments as ``AWS::FIS::ExperimentTemplate`` resources). docs/fault-injection.md
says how to run each and what to watch; docs/reliability.md what Metro promises under each.

One experiment per failure the local fault run simulates, with the closest mechanism FIS really has:

* ``lambda-throttle``: FIS has no Lambda throttle action; ``aws:ssm:start-automation-execution`` runs a runbook
  that reserves 0 concurrency for fan-out and push, then restores (infra/fis_iam.py);
* ``lambda-errors``: ``aws:lambda:invocation-error`` without running the code (a crash before any write);
* ``lambda-lost-answers``: the same after running the code (the write happened, the caller sees a failure);
* ``lambda-pause``: ``aws:lambda:invocation-add-delay`` (a paused process, past the default ack deadline);
* with the gRPC edge: ``grpc-task-stop`` (``aws:ecs:stop-task``), ``grpc-az-loss``,
  ``grpc-dynamodb-unreachable`` and ``grpc-s3-unreachable`` (``aws:network:disrupt-connectivity``).

Pure: strings carry CloudFormation's pseudo parameters, which :func:`cloudformation_resources` wraps in ``Fn::Sub``
and :func:`write` resolves for the account and region given. Each experiment stops on alarms infra/observability.py
defines which the injected fault itself should not set off (those it should are what to watch, not stop on).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import fis_iam
from infra.names import FUNCTIONS, StageNames, check_stage, resolve

Template = dict[str, Any]
# The action ids these templates use, each checked against the AWS FIS actions reference (docs/fault-injection.md).
ACTION_IDS = frozenset(fis_iam.PERMISSIONS)
THROTTLED = ("fanout", "push")  # the event-driven functions whose mappings retry a throttled batch
FAILING = ("api_handler", "fanout", "push")  # what `make chaos` kills: the API and the pumps
PAUSED = ("api_handler", "push")
OPTIONS = {"accountTargeting": "single-account", "emptyTargetResolutionMode": "fail"}


@dataclass(frozen=True)
class GrpcNetwork:
    """Where the gRPC edge stack runs (its VpcId and SubnetIds parameters), and the Availability Zone the AZ
    experiment takes out."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    availability_zone: str


def _alarm(name: str) -> dict[str, str]:
    return {"source": "aws:cloudwatch:alarm",
            "value": f"{fis_iam.ARN}:cloudwatch:{fis_iam.REGION_ACCOUNT}:alarm:{name}"}


def stop_alarms(names: StageNames) -> dict[str, str]:
    """The alarms (infra/observability.py) experiments stop on, by role: records the fan-out could not deliver,
    consumers handed hour-old messages, the REST API answering 5xx, maintenance no longer running."""
    return {"dlq": f"{names.dlq}-not-empty", "unacked": f"{names.prefix}-oldest-unacked-age",
            "api_5xx": f"{names.prefix}-5xx", "maintenance": f"{names.prefix}-maintenance-missing"}


def _stops(names: StageNames, *roles: str) -> list[dict[str, str]]:
    alarms = stop_alarms(names)
    return [_alarm(alarms[r]) for r in roles]


def _functions_target(names: StageNames, functions: tuple[str, ...]) -> dict[str, Any]:
    """Metro's functions by ARN: Chalice tags them only with its own version string, so tags cannot name them."""
    return {"resourceType": "aws:lambda:function", "selectionMode": "ALL",
            "resourceArns": [fis_iam.function_arn(names, f) for f in functions]}


def _template(names: StageNames, key: str, description: str, targets: dict[str, Any], actions: dict[str, Any],
              stops: list[dict[str, str]]) -> Template:
    return {"description": description, "targets": targets, "actions": actions, "stopConditions": stops,
            "roleArn": fis_iam.role_arn(fis_iam.fis_role_name(names)),
            "tags": {"Name": f"{names.prefix}-{key}", "metro-stage": names.stage, "metro-failure": key},
            "experimentOptions": dict(OPTIONS)}


def _throttle(names: StageNames, reserved: Mapping[str, int], duration: str) -> Template:
    """Every invocation of fan-out and push throttled for ``duration``: their mappings hold the records and
    messages and retry (the runbook waits ``duration``; FIS gives it five minutes more to restore)."""
    actions = {}
    for function in THROTTLED:
        params = {"AutomationAssumeRole": fis_iam.role_arn(fis_iam.automation_role_name(names)),
                  "FunctionName": names.function(function),
                  "RestoreConcurrency": str(reserved.get(function, fis_iam.UNRESERVED)), "Duration": duration}
        actions[f"throttle-{function.replace('_', '-')}"] = {
            "actionId": "aws:ssm:start-automation-execution",
            "description": f"reserve 0 concurrency for {names.function(function)}, then restore it",
            "parameters": {"documentArn": fis_iam.runbook_arn(names), "documentParameters": json.dumps(params),
                           "maxDuration": "PT15M"}}
    return _template(names, "lambda-throttle", f"Metro {names.stage}: Lambda throttles fan-out and push",
                     {}, actions, _stops(names, "dlq", "unacked"))


def _invocation_errors(names: StageNames, key: str, prevent: bool, percent: int, duration: str) -> Template:
    what = "before running" if prevent else "after running (the answer is lost)"
    return _template(
        names, key, f"Metro {names.stage}: {percent}% of API, fan-out and push invocations fail {what}",
        {"functions": _functions_target(names, FAILING)},
        {"fail-invocations": {"actionId": "aws:lambda:invocation-error", "targets": {"Functions": "functions"},
                              "parameters": {"duration": duration, "invocationPercentage": str(percent),
                                             "preventExecution": "true" if prevent else "false"}}},
        _stops(names, "dlq", "unacked"))


def _pause(names: StageNames, delay_ms: int, percent: int, duration: str) -> Template:
    return _template(
        names, "lambda-pause", f"Metro {names.stage}: {percent}% of API and push invocations start {delay_ms} ms late",
        {"functions": _functions_target(names, PAUSED)},
        {"delay-invocations": {"actionId": "aws:lambda:invocation-add-delay", "targets": {"Functions": "functions"},
                               "parameters": {"duration": duration, "invocationPercentage": str(percent),
                                              "startupDelayMilliseconds": str(delay_ms)}}},
        _stops(names, "dlq", "unacked"))


def _subnets(grpc: GrpcNetwork) -> dict[str, Any]:
    return {"resourceType": "aws:ec2:subnet", "selectionMode": "ALL",
            "resourceArns": [f"{fis_iam.ARN}:ec2:{fis_iam.REGION_ACCOUNT}:subnet/{s}" for s in grpc.subnet_ids]}


def _disrupt(scope: str, duration: str, target: str = "subnets") -> dict[str, Any]:
    return {"actionId": "aws:network:disrupt-connectivity", "targets": {"Subnets": target},
            "parameters": {"scope": scope, "duration": duration}}


def _grpc(names: StageNames, grpc: GrpcNetwork, duration: str) -> dict[str, Template]:
    """The gRPC edge's experiments. Its load balancer shares the subnets, so losing an AZ's subnets takes the load
    balancer's node there too; Metro's Lambda functions are outside the VPC and untouched (the REST API's 5xx
    alarm stops the experiment if they are not)."""
    if not grpc.subnet_ids or not grpc.availability_zone:
        raise ValueError("the gRPC edge's experiments need its subnets and the Availability Zone to cut off")
    stops = _stops(names, "api_5xx", "dlq", "unacked")
    tasks = {"resourceType": "aws:ecs:task", "selectionMode": "COUNT(1)",
             "parameters": {"cluster": names.grpc_stack, "service": names.grpc_stack}}
    zone = {"resourceType": "aws:ec2:subnet", "selectionMode": "ALL",
            "parameters": {"availabilityZoneIdentifier": grpc.availability_zone, "vpc": grpc.vpc_id}}
    return {
        "grpc-task-stop": _template(
            names, "grpc-task-stop", f"Metro {names.stage}: one gRPC edge task stopped",
            {"task": tasks}, {"stop-task": {"actionId": "aws:ecs:stop-task", "targets": {"Tasks": "task"}}}, stops),
        "grpc-az-loss": _template(
            names, "grpc-az-loss", f"Metro {names.stage}: the gRPC edge's subnets in {grpc.availability_zone} cut off",
            {"zone": zone}, {"cut-zone": _disrupt("all", duration, "zone")}, stops),
        "grpc-dynamodb-unreachable": _template(
            names, "grpc-dynamodb-unreachable", f"Metro {names.stage}: the gRPC edge cannot reach DynamoDB",
            {"subnets": _subnets(grpc)}, {"cut-dynamodb": _disrupt("dynamodb", duration)}, stops),
        "grpc-s3-unreachable": _template(
            names, "grpc-s3-unreachable", f"Metro {names.stage}: the gRPC edge cannot reach S3",
            {"subnets": _subnets(grpc)}, {"cut-s3": _disrupt("s3", duration)}, stops),
    }


def templates(stage: str, grpc: GrpcNetwork | None = None, reserved: Mapping[str, int] | None = None,
              duration: str = "PT5M", percent: int = 10, delay_ms: int = 15_000) -> dict[str, Template]:
    """The stage's experiment templates by name, in the shape ``aws fis create-experiment-template`` takes.

    ``reserved``: the functions' reserved concurrency today (the deploy's plan, infra/concurrency.py), which the
    throttle restores; ``grpc``: the gRPC edge's network, without which its experiments are left out."""
    names = StageNames(check_stage(stage))
    if not 1 <= percent <= 100 or not 0 <= delay_ms <= 900_000:
        raise ValueError("percent must be 1-100 and delay_ms 0-900,000 (the FIS actions' ranges)")
    out = {
        "lambda-throttle": _throttle(names, reserved or {}, duration),
        "lambda-errors": _invocation_errors(names, "lambda-errors", True, percent, duration),
        "lambda-lost-answers": _invocation_errors(names, "lambda-lost-answers", False, percent, duration),
        "lambda-pause": _pause(names, delay_ms, percent, duration),
    }
    if grpc is not None:
        out.update(_grpc(names, grpc, duration))
    return out


def action_ids(found: Mapping[str, Template]) -> set[str]:
    return {a["actionId"] for t in found.values() for a in t["actions"].values()}


def lambda_functions(found: Mapping[str, Template]) -> list[str]:
    """The Chalice names of the functions the templates' Lambda actions target."""
    arns = {arn for t in found.values() for target in t["targets"].values()
            if target["resourceType"] == "aws:lambda:function" for arn in target["resourceArns"]}
    names = {arn.rsplit(":function:", 1)[1] for arn in arns}
    stages = {t["tags"]["metro-stage"] for t in found.values()}
    return sorted(f for f in FUNCTIONS for stage in stages if StageNames(stage).function(f) in names)


# --- CloudFormation ------------------------------------------------------------------------------------------------

_CFN_KEYS = {"description": "Description", "targets": "Targets", "actions": "Actions", "stopConditions":
             "StopConditions", "roleArn": "RoleArn", "tags": "Tags", "experimentOptions": "ExperimentOptions",
             "resourceType": "ResourceType", "resourceArns": "ResourceArns", "resourceTags": "ResourceTags",
             "parameters": "Parameters", "filters": "Filters", "selectionMode": "SelectionMode",
             "actionId": "ActionId", "startAfter": "StartAfter", "source": "Source", "value": "Value",
             "path": "Path", "values": "Values",
             "accountTargeting": "AccountTargeting", "emptyTargetResolutionMode": "EmptyTargetResolutionMode"}
_USER_MAPS = {"targets", "actions", "parameters", "tags"}  # keys whose entries are names or values, not properties


def _pascal(value: Any, key: str = "") -> Any:
    """The API's camelCase shape as CloudFormation's properties; names inside maps stay as they are."""
    if isinstance(value, dict):
        if key in ("parameters", "tags") or (key == "targets" and all(isinstance(v, str) for v in value.values())):
            return dict(value)
        if key in _USER_MAPS:
            return {k: _pascal(v) for k, v in value.items()}
        return {_CFN_KEYS[k]: _pascal(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_pascal(v) for v in value]
    return value


def _sub(value: Any) -> Any:
    """Every string naming a pseudo parameter inside ``Fn::Sub``."""
    if isinstance(value, dict):
        return {k: _sub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sub(v) for v in value]
    return {"Fn::Sub": value} if isinstance(value, str) and "${AWS::" in value else value


def logical_id(name: str) -> str:
    return "Fis" + "".join(part.capitalize() for part in name.split("-"))


def support_resources(stage: str, found: Mapping[str, Template]) -> Template:
    """The FIS role for ``found``, and, when they throttle, the runbook and its role."""
    names = StageNames(stage)
    ids = action_ids(found)
    out: Template = {"FisRole": {"Type": "AWS::IAM::Role", "Properties": fis_iam.fis_role(
        names, fis_iam.fis_role_statements(names, ids, lambda_functions(found)))}}
    if "aws:ssm:start-automation-execution" in ids:
        out["FisAutomationRole"] = {"Type": "AWS::IAM::Role",
                                    "Properties": fis_iam.automation_role(names, list(THROTTLED))}
        out["FisThrottleRunbook"] = {"Type": "AWS::SSM::Document", "Properties": {
            "Name": fis_iam.runbook_name(names), "DocumentType": "Automation", "DocumentFormat": "JSON",
            "UpdateMethod": "NewVersion", "Content": fis_iam.throttle_runbook(names)}}
    return {key: _sub(resource) for key, resource in out.items()}


def cloudformation_resources(stage: str, found: Mapping[str, Template] | None = None,
                             with_experiments: bool = True) -> Template:
    """The resources of :func:`support_resources` and, ``with_experiments``, one ``AWS::FIS::ExperimentTemplate``
    per template (each depending on the role, which it names)."""
    found = found if found is not None else templates(stage)
    out = support_resources(stage, found)
    support = sorted(out)  # the experiments name them by ARN, not by Ref: say the order
    if with_experiments:
        for name, template in found.items():
            out[logical_id(name)] = {"Type": "AWS::FIS::ExperimentTemplate", "DependsOn": support,
                                     "Properties": _sub(_pascal(template))}
    return out


def stack(stage: str, found: Mapping[str, Template], with_experiments: bool = True) -> Template:
    return {"AWSTemplateFormatVersion": "2010-09-09",
            "Description": f"Metro {stage}: fault injection experiments (infra/fis.py, docs/fault-injection.md)",
            "Resources": cloudformation_resources(stage, found, with_experiments)}


def _resolved(value: Any, account: str, region: str, partition: str) -> Any:
    if isinstance(value, dict):
        return {k: _resolved(v, account, region, partition) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, account, region, partition) for v in value]
    return resolve(value, account, region, partition) if isinstance(value, str) else value


def write(out_dir: Path, stage: str, account: str, region: str, partition: str = "aws",
          **options: Any) -> list[Path]:
    """``<name>.json`` per template (resolved for ``account`` and ``region``), ``support.json`` and ``stack.json``."""
    found = templates(stage, **options)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, template in found.items():
        path = out_dir / f"{name}.json"
        path.write_text(json.dumps(_resolved(template, account, region, partition), indent=2) + "\n")
        written.append(path)
    for name, with_experiments in (("support.json", False), ("stack.json", True)):
        path = out_dir / name
        path.write_text(json.dumps(stack(stage, found, with_experiments), indent=2) + "\n")
        written.append(path)
    return written


def _reserved(pairs: list[str]) -> dict[str, int]:
    out = {}
    for pair in pairs:
        function, _, value = pair.partition("=")
        out[function] = int(value)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write the stage's FIS experiment templates (docs/fault-injection.md).")
    p.add_argument("--stage", required=True)
    p.add_argument("--account", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--out", type=Path, default=Path("build/fis"))
    p.add_argument("--reserved", action="append", default=[], metavar="FUNCTION=N",
                   help="a function's reserved concurrency today, which the throttle restores (repeatable)")
    p.add_argument("--grpc-vpc", default="")
    p.add_argument("--grpc-subnets", default="", help="comma-separated subnet ids of the gRPC edge stack")
    p.add_argument("--grpc-az", default="", help="the Availability Zone grpc-az-loss cuts off")
    args = p.parse_args(argv)
    grpc = None
    if args.grpc_vpc:
        grpc = GrpcNetwork(args.grpc_vpc, tuple(s for s in args.grpc_subnets.split(",") if s), args.grpc_az)
    for path in write(args.out, args.stage, args.account, args.region, grpc=grpc, reserved=_reserved(args.reserved)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
