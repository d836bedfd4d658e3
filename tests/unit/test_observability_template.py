"""infra/observability.py on a small template of the packaged one's shape (the packaged template itself:
tests/package/test_observability_template.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra import api_monitoring, http_api, observability
from infra.names import FUNCTIONS, StageNames
from infra.template import FUNCTION_IDS


def small(front_door: str = "rest") -> dict[str, Any]:
    names = StageNames("dev")
    resources: dict[str, Any] = {
        FUNCTION_IDS[f]: {"Type": "AWS::Serverless::Function", "Properties": {"FunctionName": names.function(f)}}
        for f in FUNCTIONS}
    if front_door == "http":
        for api in http_api.APIS:
            resources[api] = {"Type": "AWS::ApiGatewayV2::Api", "Properties": {}}
            resources[http_api.stage_id(api)] = {"Type": "AWS::ApiGatewayV2::Stage", "Properties": {}}
        return {"Resources": resources, "Outputs": {}}
    for api in api_monitoring.REST_APIS:
        resources[api] = {"Type": "AWS::Serverless::Api", "Properties": {"StageName": "dev"}}
    return {"Resources": resources, "Outputs": {}}


@pytest.mark.parametrize("front_door", ["http", "rest"])
def test_every_alarm_has_the_topic_and_is_on_the_dashboard(front_door: str) -> None:
    out = small(front_door)
    observability.add(out, "dev")
    alarms = {k for k, v in out["Resources"].items() if v["Type"] == "AWS::CloudWatch::Alarm"}
    assert len(alarms) == 2 * len(FUNCTIONS) + 17
    body, _ = out["Resources"][observability.DASHBOARD_ID]["Properties"]["DashboardBody"]["Fn::Sub"]
    widgets = json.loads(body)["widgets"]
    [listed] = [w["properties"]["alarms"] for w in widgets if w["type"] == "alarm"]
    assert sorted(listed) == sorted(f"${{{a}.Arn}}" for a in alarms)
    assert out["Outputs"]["AlarmTopicArn"] == {"Value": {"Ref": observability.TOPIC_ID}}
    assert observability.EMAIL_ID not in out["Resources"]  # no address given


def test_a_retention_cloudwatch_refuses_is_refused_here() -> None:
    with pytest.raises(ValueError, match="log_retention_days"):
        observability.add(small(), "dev", log_retention_days=45)


@pytest.mark.parametrize("fmt", [api_monitoring.ACCESS_LOG_FORMAT, api_monitoring.HTTP_ACCESS_LOG_FORMAT])
def test_the_access_log_format_is_json_without_query_string_or_headers(fmt: str) -> None:
    fields = json.loads(fmt)
    assert all(v.startswith("$context.") for v in fields.values())
    text = fmt.lower()
    assert "querystring" not in text and "header" not in text and "apikey" not in text


def test_the_alarm_topic_lets_the_accounts_alarms_and_rules_publish_and_no_one_else() -> None:
    out = small()
    observability.add(out, "dev")
    policy = out["Resources"][observability.TOPIC_POLICY_ID]["Properties"]
    assert policy["Topics"] == [{"Ref": observability.TOPIC_ID}]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": ["cloudwatch.amazonaws.com", "events.amazonaws.com"]}
    assert statement["Action"] == "sns:Publish"
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    given = small()
    observability.add(given, "dev", alarm_topic_arn="arn:aws:sns:us-east-1:123456789012:theirs")
    assert observability.TOPIC_POLICY_ID not in given["Resources"]  # another stack's topic is left alone
