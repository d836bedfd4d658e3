"""Per-function IAM: named actions only, resources scoped to the stage's own tables, bucket, queues and functions,
checked on the policy files (and on the template ``chalice package`` generates from them in
tests/package/test_app_template.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra import policies
from infra.names import FUNCTIONS, StageNames, check_stage, resolve

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / ".chalice" / "config.json").read_text())
CASES = [(stage, fn) for stage in policies.STAGES for fn in FUNCTIONS]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def resource_text(resource: Any) -> str:
    return resource["Fn::Sub"] if isinstance(resource, dict) else str(resource)


def assert_scoped(stage: str, doc: dict[str, Any]) -> None:
    names = StageNames(stage)
    for st in doc["Statement"]:
        assert st["Effect"] == "Allow"
        actions = as_list(st["Action"])
        assert not [a for a in actions if "*" in a], st
        for resource in as_list(st["Resource"]):
            text = resource_text(resource)
            if text == "*":
                assert set(actions) <= policies.RESOURCELESS_ACTIONS, st
                if "lambda:CreateEventSourceMapping" in actions:  # only onto the stage's own functions
                    targets = as_list(st["Condition"]["StringEquals"]["lambda:FunctionArn"])
                    assert all(resource_text(t).endswith((f":function:{names.function('push')}",
                                                          f":function:{names.function('export')}",
                                                          f":function:{names.function('ingest')}"))
                               for t in targets), st
                continue
            if ":event-source-mapping:" in text:
                assert st["Condition"]["StringEquals"]["lambda:FunctionArn"], st
                continue
            if text.startswith(f"arn:${{AWS::Partition}}:s3:::{names.prefix}-export-") or \
                    text.startswith(f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/{names.prefix}-export-"):
                continue  # export subscriptions' buckets and roles, by the stage's pattern (docs/export.md)
            if text.startswith(f"arn:${{AWS::Partition}}:s3:::{names.prefix}-import-") or \
                    text.startswith(f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/{names.prefix}-import-"):
                continue  # import topics' buckets and roles, by the stage's pattern (docs/import.md)
            assert re.search(rf"[/:]{names.prefix}(-|:|/|$)", text), text  # a name (or path) of this stage
            assert "${AWS::AccountId}" in text or text.startswith("arn:${AWS::Partition}:s3:::"), text
            assert "${AWS::Region}" in text, text  # the bucket's name carries the region too


@pytest.mark.parametrize(("stage", "function"), CASES)
def test_each_function_policy_is_named_actions_on_the_stage_resources(stage: str, function: str) -> None:
    entry = CONFIG["stages"][stage]["lambda_functions"][function]
    assert entry["autogen_policy"] is False
    doc = json.loads((ROOT / ".chalice" / entry["iam_policy_file"]).read_text())
    assert doc == policies.policy(stage, function)
    assert_scoped(stage, doc)


def test_checked_in_policies_match_the_generator() -> None:
    assert policies.main(["--check"]) == 0
    assert not (ROOT / ".chalice" / "policy.json").exists()  # no policy shared by every function


def test_stages_name_their_own_resources() -> None:
    dev, prod = StageNames("dev"), StageNames("prod")
    named = [k for k in dev.environment() if k != "METRO_MAX_REQUEST_BYTES"]
    assert {dev.environment()[k] for k in named}.isdisjoint(prod.environment()[k] for k in named)
    for stage in policies.STAGES:  # the deploy's merge names them (tests/package/), Chalice's config does not
        env = CONFIG["stages"][stage]["environment_variables"]
        assert set(env) == {"METRO_PUSH_FUNCTION"} and env["METRO_PUSH_FUNCTION"] == StageNames(stage).function("push")
    bucket = resolve(dev.bucket, "123456789012", "eu-west-1")
    assert bucket == "metro-dev-123456789012-eu-west-1" and len(bucket) <= 63
    assert "metro-messages" not in json.dumps(CONFIG)
    with pytest.raises(ValueError):
        check_stage("Prod_1")


def test_functions_do_not_share_grants() -> None:
    def actions(function: str) -> set[str]:
        return {a for st in policies.policy("dev", function)["Statement"] for a in as_list(st["Action"])}

    assert "dynamodb:Scan" in actions("maintenance") and "dynamodb:Scan" not in actions("api_handler")
    # fan-out invokes only itself (a wide topic's slices)
    assert {a for a in actions("fanout") if a.startswith("lambda:") or a in policies.QUEUE_ADMIN} == {
        "lambda:InvokeFunction"}
    # push invokes only the transform function, whose role writes its logs and nothing else
    push_lambda = [st for st in policies.policy("dev", "push")["Statement"]
                   if any(a.startswith("lambda:") for a in as_list(st["Action"]))]
    assert [(st["Action"], json.dumps(st["Resource"])) for st in push_lambda] == [
        (["lambda:InvokeFunction"], json.dumps([{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:"
                                                             "${AWS::AccountId}:function:metro-dev-transform"}]))]
    assert actions("transform") == {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTelemetryRecords",
                                    "xray:PutTraceSegments"}
    assert "dynamodb:GetRecords" in actions("fanout") and "dynamodb:GetRecords" not in actions("push")

