"""The deployment settings the push path depends on (.chalice/config.json, its per-function policies, infra/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / ".chalice" / "config.json").read_text())
DEPLOYED = [stage for stage, s in CONFIG["stages"].items() if s.get("environment_variables", {}).get(
    "METRO_MODE", CONFIG["environment_variables"].get("METRO_MODE")) == "aws"]


def function_setting(stage: str, function: str, key: str) -> Any:
    """A Lambda setting as Chalice resolves it: function in stage, then stage, then the top level."""
    s = CONFIG["stages"][stage]
    return s.get("lambda_functions", {}).get(function, {}).get(key, s.get(key, CONFIG.get(key)))


def allowed(stage: str, function: str, action: str) -> bool:
    policy_file = CONFIG["stages"][stage]["lambda_functions"][function]["iam_policy_file"]
    policy = json.loads((ROOT / ".chalice" / policy_file).read_text())
    return any(action in st["Action"] for st in policy["Statement"] if st["Effect"] == "Allow")


def test_there_are_deployed_stages() -> None:
    assert set(DEPLOYED) >= {"dev", "prod"}


@pytest.mark.parametrize("stage", DEPLOYED)
def test_push_function_fits_an_sqs_mapping(stage: str) -> None:
    # Lambda refuses an SQS mapping whose queue visibility (the ack deadline, >= 10 s) is below the function timeout
    assert function_setting(stage, "push", "lambda_timeout") <= 10
    env = {**CONFIG["environment_variables"], **CONFIG["stages"][stage].get("environment_variables", {})}
    assert env["METRO_PUSH_FUNCTION"] == f"{CONFIG['app_name']}-{stage}-push"  # Chalice's function name


@pytest.mark.parametrize("stage", DEPLOYED)
def test_policy_lets_metro_manage_push_mappings_and_deliver(stage: str) -> None:
    for function in ("api_handler", "seek_worker"):  # push configuration changes, a seek's new queue generation
        for action in ("lambda:CreateEventSourceMapping", "lambda:ListEventSourceMappings",
                       "lambda:UpdateEventSourceMapping", "lambda:DeleteEventSourceMapping"):
            assert allowed(stage, function, action), (function, action)
    for action in ("lambda:ListEventSourceMappings", "lambda:DeleteEventSourceMapping"):  # the idle expiry
        assert allowed(stage, "maintenance", action), action
    assert not allowed(stage, "maintenance", "lambda:CreateEventSourceMapping")  # repair is the deploy's (stage_data)
    for action in (  # the push function's role is what the mapping polls the queue with
                   "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes",
                   # throttle state, push index (and its removal in one BatchWriteItem)
                   "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:BatchWriteItem", "s3:GetObject"):
        assert allowed(stage, "push", action), action
    assert not allowed(stage, "push", "lambda:CreateEventSourceMapping")
    assert not allowed(stage, "fanout", "sqs:DeleteQueue")


def test_deploy_repairs_push_mappings_without_partial_batch_failure_reports() -> None:
    # Metro creates the mappings with the flag (tests/functional/test_push_config.py checks them on moto)
    import boto3
    from botocore.stub import Stubber

    from infra import stage_data

    ok, old = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
    lam = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(lam) as stub:
        stub.add_response("list_event_source_mappings", {"EventSourceMappings": [
            {"UUID": ok, "FunctionResponseTypes": ["ReportBatchItemFailures"]}, {"UUID": old}]},
            {"FunctionName": "metro-dev-push"})
        stub.add_response("update_event_source_mapping", {"UUID": old},
                          {"UUID": old, "FunctionResponseTypes": ["ReportBatchItemFailures"]})
        assert stage_data.repair_push_mappings(lam, "metro-dev-push") == 1
        stub.assert_no_pending_responses()
