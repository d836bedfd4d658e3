"""infra/deploy.py: the storage template, change sets and re-runs with nothing to change (the merged app template
and cfn-lint: tests/package/test_app_template.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from infra import deploy
from infra.names import StageNames

ROOT = Path(__file__).resolve().parents[2]
NO_CHANGE = "The submitted information didn't contain changes. Submit different information to create a change set."


def test_tables_and_bucket_are_kept_on_delete_and_replacement() -> None:
    storage = json.loads((ROOT / "infra" / "resources.json").read_text())
    kinds = {r["Type"] for r in storage["Resources"].values()}
    assert kinds == {"AWS::DynamoDB::Table", "AWS::S3::Bucket"}
    for resource in storage["Resources"].values():
        assert resource["DeletionPolicy"] == "Retain" and resource["UpdateReplacePolicy"] == "Retain"
    assert not [p for p in storage["Parameters"].values() if "Default" in p]  # no global default names
    export = storage["Outputs"]["MessagesStreamArn"]["Export"]["Name"]
    assert export == {"Fn::Sub": "${AWS::StackName}-MessagesStreamArn"}


# --- change sets: re-runs with nothing to change --------------------------------------------------


@pytest.fixture()
def cfn() -> Any:
    return boto3.client("cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def stack(status: str) -> dict[str, Any]:
    return {"Stacks": [{"StackName": "metro-dev-storage", "StackStatus": status, "CreationTime": "2026-01-01"}]}


def test_a_rerun_with_nothing_to_change_changes_nothing(cfn: Any) -> None:
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", stack("UPDATE_COMPLETE"), {"StackName": "metro-dev-storage"})
        stub.add_response("create_change_set", {"Id": "arn:cs"}, {
            "StackName": "metro-dev-storage", "ChangeSetName": ANY, "ChangeSetType": "UPDATE",
            "Capabilities": deploy.CAPABILITIES, "Parameters": [{"ParameterKey": "A", "ParameterValue": "1"}],
            "TemplateBody": "{}"})
        failed = {"Status": "FAILED", "StatusReason": NO_CHANGE, "ExecutionStatus": "UNAVAILABLE"}
        stub.add_response("describe_change_set", failed)  # the waiter's poll: a terminal failure
        stub.add_response("describe_change_set", failed)  # read again for its reason
        stub.add_response("delete_change_set", {})
        assert deploy.apply_change_set(cfn, "metro-dev-storage", {"TemplateBody": "{}"}, {"A": "1"}) is False
        stub.assert_no_pending_responses()  # in particular: no execute_change_set


def test_a_change_is_executed_and_waited_for(cfn: Any) -> None:
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", stack("UPDATE_COMPLETE"))
        stub.add_response("create_change_set", {"Id": "arn:cs"})
        stub.add_response("describe_change_set", {"Status": "CREATE_COMPLETE", "ExecutionStatus": "AVAILABLE"})
        stub.add_response("execute_change_set", {})
        stub.add_response("describe_stacks", stack("UPDATE_COMPLETE"))  # the waiter
        assert deploy.apply_change_set(cfn, "metro-dev-storage", {"TemplateBody": "{}"}, {}) is True
        stub.assert_no_pending_responses()


def test_a_failed_change_set_for_another_reason_is_an_error(cfn: Any) -> None:
    from botocore.exceptions import WaiterError

    with Stubber(cfn) as stub:
        stub.add_client_error("describe_stacks", "ValidationError", "Stack with id metro-dev-app does not exist")
        stub.add_response("create_change_set", {"Id": "arn:cs"})
        failed = {"Status": "FAILED", "StatusReason": "Template error: bad", "ExecutionStatus": "UNAVAILABLE"}
        stub.add_response("describe_change_set", failed)
        stub.add_response("describe_change_set", failed)
        with pytest.raises(WaiterError):
            deploy.apply_change_set(cfn, "metro-dev-app", {"TemplateURL": "https://x/t.json"}, {})
        stub.assert_no_pending_responses()


def test_a_stack_whose_creation_failed_is_created_again(cfn: Any) -> None:
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", stack("ROLLBACK_COMPLETE"))
        stub.add_response("delete_stack", {})
        stub.add_client_error("describe_stacks", "ValidationError", "Stack with id metro-dev-storage does not exist")
        stub.add_response("create_change_set", {"Id": "arn:cs"}, {
            "StackName": "metro-dev-storage", "ChangeSetName": ANY, "ChangeSetType": "CREATE",
            "Capabilities": deploy.CAPABILITIES, "Parameters": [], "TemplateBody": "{}"})
        stub.add_response("describe_change_set", {"Status": "CREATE_COMPLETE", "ExecutionStatus": "AVAILABLE"})
        stub.add_response("execute_change_set", {})
        stub.add_response("describe_stacks", stack("CREATE_COMPLETE"))
        assert deploy.apply_change_set(cfn, "metro-dev-storage", {"TemplateBody": "{}"}, {}) is True
        stub.assert_no_pending_responses()


def test_uploads_are_content_addressed() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.keys: list[str] = []

        def put_object(self, **kw: Any) -> None:
            self.keys.append(kw["Key"])

    s3 = Recorder()
    first = deploy.upload(s3, "b", b"bundle", "dev", ".zip")
    assert deploy.upload(s3, "b", b"bundle", "dev", ".zip") == first  # same bytes: the template is unchanged
    assert deploy.upload(s3, "b", b"bundle2", "dev", ".zip") != first and first.startswith("deploy/dev/app-")


def test_the_storage_stack_deploys_once_and_then_has_nothing_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    for k, v in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setitem(deploy.WAIT, "Delay", 0)
    target = deploy.Target(StageNames("dev"), "123456789012", "us-east-1")
    body = {"TemplateBody": deploy.STORAGE_TEMPLATE.read_text()}
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        stack_name = target.names.storage_stack
        assert deploy.apply_change_set(cfn, stack_name, body, deploy.storage_parameters(target)) is True
        assert set(boto3.client("dynamodb", region_name="us-east-1").list_tables()["TableNames"]) == set(
            target.names.tables)
        buckets = [b["Name"] for b in boto3.client("s3", region_name="us-east-1").list_buckets()["Buckets"]]
        assert buckets == ["metro-dev-123456789012-us-east-1"]
        assert deploy.apply_change_set(cfn, stack_name, body, deploy.storage_parameters(target)) is False
        assert deploy.stack_status(cfn, stack_name) == "CREATE_COMPLETE"
