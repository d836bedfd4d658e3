"""What infra/observability.py adds to the merged app template: tracing, log groups, access logs, the alarm topic,
the alarms and the dashboard; and that the template stays within CloudFormation's limits and cfn-lint clean."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from infra import api_monitoring, http_api, observability, template
from infra.ams_stage import AMS_API_ID, API_ID
from infra.names import FUNCTIONS, StageNames
from tests.package.packaged import packaged_template
from tests.package.test_app_template import SETTINGS, cfn_lint

NAMES = StageNames("dev")
TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:ops-pager"


@pytest.fixture(scope="module")
def packaged() -> dict[str, Any]:
    return packaged_template()


@pytest.fixture(scope="module", params=template.FRONT_DOORS)
def merged(packaged: dict[str, Any], request: pytest.FixtureRequest) -> dict[str, Any]:
    return template.merge(packaged, dataclasses.replace(SETTINGS, alarm_email="ops@example.com",
                                                        front_door=request.param))


@pytest.fixture(scope="module")
def merged_rest(packaged: dict[str, Any]) -> dict[str, Any]:
    return template.merge(packaged, dataclasses.replace(SETTINGS, alarm_email="ops@example.com", front_door="rest"))


@pytest.fixture(scope="module")
def merged_http(packaged: dict[str, Any]) -> dict[str, Any]:
    return template.merge(packaged, dataclasses.replace(SETTINGS, alarm_email="ops@example.com"))


def _of_type(t: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in t["Resources"].items() if v["Type"] == kind}


def test_every_function_traces_and_depends_on_its_own_log_group(merged: dict[str, Any]) -> None:
    groups = _of_type(merged, "AWS::Logs::LogGroup")
    functions = _of_type(merged, "AWS::Serverless::Function")
    assert set(functions) == set(template.FUNCTION_IDS.values())
    for logical_id, function in functions.items():
        props = function["Properties"]
        assert props["Tracing"] == "Active"
        group = groups[f"{logical_id}LogGroup"]["Properties"]
        assert group == {"LogGroupName": f"/aws/lambda/{props['FunctionName']}", "RetentionInDays": 30}
        assert f"{logical_id}LogGroup" in function["DependsOn"]  # Lambda never makes the group first


def test_both_rest_apis_trace_and_write_access_logs_without_the_query_string(merged_rest: dict[str, Any]) -> None:
    resources = merged_rest["Resources"]
    for logical_id, name in ((API_ID, "metro-dev"), (AMS_API_ID, "metro-dev-ams")):
        props = resources[logical_id]["Properties"]
        assert props["TracingEnabled"] is True and props["Name"] == name
        setting = props["AccessLogSetting"]
        assert setting["DestinationArn"] == {"Fn::GetAtt": [f"{logical_id}AccessLogGroup", "Arn"]}
        fields = json.loads(setting["Format"])
        assert fields["requestId"] == "$context.requestId" and fields["path"] == "$context.path"
        assert "querystring" not in setting["Format"].lower() and "apiKey" not in setting["Format"]
        assert resources[f"{logical_id}AccessLogGroup"]["Properties"]["RetentionInDays"] == 30
        assert resources[logical_id]["DependsOn"] == [observability.APIGW_ACCOUNT_ID]
    assert resources[AMS_API_ID]["Properties"]["Variables"] == {"dialect": "ams"}  # the dialect's stage stays
    role = resources[observability.APIGW_ROLE_ID]
    assert role["DeletionPolicy"] == "Retain"  # the account's setting may serve other APIs after this stack


def test_both_http_api_stages_write_access_logs_without_the_query_string(merged_http: dict[str, Any]) -> None:
    resources = merged_http["Resources"]
    for logical_id, name in ((http_api.API_ID, "metro-dev"), (http_api.AMS_API_ID, "metro-dev-ams")):
        assert resources[logical_id]["Properties"]["Name"] == name
        setting = resources[http_api.stage_id(logical_id)]["Properties"]["AccessLogSettings"]
        assert setting["DestinationArn"] == {"Fn::GetAtt": [f"{logical_id}AccessLogGroup", "Arn"]}
        fields = json.loads(setting["Format"])
        assert fields["routeKey"] == "$context.routeKey" and fields["path"] == "$context.path"
        assert "querystring" not in setting["Format"].lower() and "apiKey" not in setting["Format"]
        assert resources[f"{logical_id}AccessLogGroup"]["Properties"]["LogGroupName"] == f"/metro/dev/{name}-access"
    # HTTP APIs log through a service-linked role: the account's API Gateway role is REST's alone
    assert observability.APIGW_ROLE_ID not in resources and observability.APIGW_ACCOUNT_ID not in resources


def test_the_api_alarms_watch_each_front_doors_metrics(merged_rest: dict[str, Any],
                                                       merged_http: dict[str, Any]) -> None:
    def alarms(merged: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {k: v["Properties"] for k, v in _of_type(merged, "AWS::CloudWatch::Alarm").items()}

    rest, http = alarms(merged_rest), alarms(merged_http)
    assert rest["AmsRestAPI5xxAlarm"]["MetricName"] == "5XXError"
    assert rest["AmsRestAPI5xxAlarm"]["Dimensions"] == [{"Name": "ApiName", "Value": "metro-dev-ams"}]
    five = http["AmsHttpApi5xxAlarm"]
    assert (five["MetricName"], five["Statistic"], five["AlarmName"]) == ("5xx", "Average", "metro-dev-ams-5xx")
    assert five["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": http_api.AMS_API_ID}}]
    assert http["HttpApiLatencyAlarm"]["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": http_api.API_ID}}]
    body = merged_http["Resources"][observability.DASHBOARD_ID]["Properties"]["DashboardBody"]["Fn::Sub"][0]
    assert '"ApiId","${AmsHttpApi}"' in body and '"5xx"' in body and "ApiName" not in body
    assert api_monitoring.is_http(merged_http["Resources"]) and not api_monitoring.is_http(merged_rest["Resources"])


def test_every_alarm_tells_the_stacks_topic_and_its_email(merged: dict[str, Any]) -> None:
    resources = merged["Resources"]
    alarms = _of_type(merged, "AWS::CloudWatch::Alarm")
    assert len(alarms) == 17 + 2 * len(FUNCTIONS)  # errors and throttles of each function, and 17 others
    for alarm in alarms.values():
        props = alarm["Properties"]
        assert props["AlarmActions"] == [{"Ref": observability.TOPIC_ID}] == props["OKActions"]
        assert props["AlarmName"].startswith("metro-dev") and "docs/operations.md" in props["AlarmDescription"]
    assert resources[observability.TOPIC_ID]["Properties"]["TopicName"] == "metro-dev-alarms"
    email = resources[observability.EMAIL_ID]["Properties"]
    assert email == {"TopicArn": {"Ref": observability.TOPIC_ID}, "Protocol": "email", "Endpoint": "ops@example.com"}
    names = {a["Properties"]["AlarmName"] for a in alarms.values()}
    for function in ["metro-dev"] + [f"metro-dev-{f}" for f in FUNCTIONS if f != "api_handler"]:
        assert {f"{function}-errors", f"{function}-throttles"} <= names
    assert {"metro-dev-fanout-iterator-age", "metro-dev-5xx", "metro-dev-latency-p99", "metro-dev-ams-5xx",
            "metro-dev-ams-latency-p99", "metro-dev-resources-read-throttled", "metro-dev-messages-write-throttled",
            "metro-dev-leases-write-throttled", "metro-dev-dynamodb-user-errors", "metro-dev_fanout-failures-not-empty",
            "metro-dev-oldest-unacked-age", "metro-dev-push-failure-rate", "metro-dev-maintenance-missing",
            "metro-dev-seek-stuck"} <= names


def test_the_alarms_watch_what_metro_emits(merged: dict[str, Any]) -> None:
    alarms = {k: v["Properties"] for k, v in _of_type(merged, "AWS::CloudWatch::Alarm").items()}
    heartbeat = alarms["MaintenanceHeartbeatAlarm"]
    assert (heartbeat["Namespace"], heartbeat["MetricName"]) == ("Metro", "MaintenanceRuns")
    assert heartbeat["Dimensions"] == [{"Name": "service", "Value": "metro"}]
    assert heartbeat["TreatMissingData"] == "breaching" and heartbeat["ComparisonOperator"] == "LessThanThreshold"
    assert alarms["StuckSeekAlarm"]["MetricName"] == "SeekOldestProgressAge"
    rate = alarms["PushFailureRateAlarm"]
    assert (rate["MetricName"], rate["Statistic"], rate["Threshold"]) == ("PushFailureRate", "Average", 25.0)
    oldest = alarms["OldestUnackedAlarm"]
    assert (oldest["MetricName"], oldest["Statistic"], oldest["Threshold"]) == ("OldestUnackedAge", "Maximum", 3600)
    assert alarms["FanoutIteratorAgeAlarm"]["Dimensions"] == [{"Name": "FunctionName", "Value": "metro-dev-fanout"}]
    assert alarms["FanoutFailuresAlarm"]["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["FanoutFailures", "QueueName"]}
    throttles = alarms["MessagesTableWriteThrottlesAlarm"]
    assert throttles["MetricName"] == "WriteThrottleEvents"
    assert throttles["Dimensions"] == [{"Name": "TableName", "Value": "metro-dev-messages"}]
    # one metric each: the rehearsal's emulator refuses an alarm's metric math or Metrics Insights query (Metrics)
    assert not [k for k, a in alarms.items() if "Metrics" in a or "MetricName" not in a]


def test_an_existing_topic_replaces_the_stacks_own(packaged: dict[str, Any]) -> None:
    merged = template.merge(packaged, dataclasses.replace(SETTINGS, alarm_topic_arn=TOPIC_ARN))
    assert observability.TOPIC_ID not in merged["Resources"] and "AlarmTopicArn" not in merged["Outputs"]
    for alarm in _of_type(merged, "AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [TOPIC_ARN]


def test_the_dashboard_shows_every_function_and_alarm(merged: dict[str, Any]) -> None:
    [dashboard] = _of_type(merged, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "metro-dev"
    body, variables = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    widgets = json.loads(body)["widgets"]
    for logical_id in template.FUNCTION_IDS.values():
        assert f"${{{logical_id}}}" in body
    [alarm_widget] = [w for w in widgets if w["type"] == "alarm"]
    assert len(alarm_widget["properties"]["alarms"]) == len(_of_type(merged, "AWS::CloudWatch::Alarm"))
    assert any(w["type"] == "log" and "correlation_id" in w["properties"]["query"] for w in widgets)
    assert variables == {"Dlq": {"Fn::GetAtt": ["FanoutFailures", "QueueName"]}}
    assert merged["Outputs"]["DashboardURL"]


def test_the_template_stays_within_cloudformations_limits(merged: dict[str, Any], packaged: dict[str, Any]) -> None:
    body = json.dumps(merged, sort_keys=True)
    assert len(body) < 1_000_000 and len(merged["Resources"]) < 500  # template URL limit; resources per stack
    before = json.dumps(packaged, sort_keys=True)
    assert len(body) - len(before) < 200_000  # what observability and the rest of the merge add


def test_cfn_lint_is_clean_with_an_existing_topic_and_another_retention(packaged: dict[str, Any],
                                                                       tmp_path: Path) -> None:
    merged = template.merge(packaged, dataclasses.replace(SETTINGS, alarm_topic_arn=TOPIC_ARN, log_retention_days=90))
    path = tmp_path / "app.json"
    path.write_text(json.dumps(merged))
    done = cfn_lint(path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_function_role_may_write_traces(merged: dict[str, Any]) -> None:
    """Lambda refuses active tracing to a role that cannot write traces (docs/operations.md#traces)."""
    for logical_id, function in _of_type(merged, "AWS::Serverless::Function").items():
        role = merged["Resources"][function["Properties"]["Role"]["Fn::GetAtt"][0]]
        granted = [st for policy in role["Properties"]["Policies"] for st in policy["PolicyDocument"]["Statement"]
                   if st["Resource"] in ("*", ["*"])]
        actions = {a for st in granted for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])}
        assert {"xray:PutTraceSegments", "xray:PutTelemetryRecords"} <= actions, logical_id
