"""What the app stack tells its operators (pure; infra/template.py's ``merge`` calls :func:`add` once).

* **Tracing**: X-Ray active tracing on every function (``Tracing: Active``) and on each REST API's stage
  (``TracingEnabled``; an HTTP API has none). No tracing SDK in the bundle (docs/operations.md#traces says why):
  the traces show API Gateway and each invocation, not the AWS calls inside it. The functions' roles need
  ``xray:PutTraceSegments`` and ``xray:PutTelemetryRecords`` on ``*`` (infra/policies.py).
* **Logs**: a log group ``/aws/lambda/<FunctionName>`` per function, kept ``log_retention_days``, which the
  function depends on (so Lambda never creates it first, without a retention); API Gateway access logs of both APIs
  (Google's, AMS's) as JSON lines without the query string (AMS keys travel in ``?key=``), in log groups of their
  own, whichever the front door (infra/api_monitoring.py); behind REST APIs, the account's API Gateway CloudWatch
  role, which their access logging needs (kept when the stack is deleted: other APIs of the account may rely on it).
* **Alarms** (:data:`ALARMS` lists them; docs/operations.md has a section per alarm), each telling the stage's SNS
  topic ``metro-<stage>-alarms`` (an e-mail subscription with ``--alarm-email``), or ``--alarm-topic-arn``'s.
* **A dashboard** ``metro-<stage>`` (infra/dashboard.py) with the metrics the alarms watch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.observability import catalog
from infra import api_monitoring
from infra.api_monitoring import Api
from infra.dashboard import ApiMetrics, dashboard_body
from infra.names import StageNames

Template = dict[str, Any]
TOPIC_ID, EMAIL_ID, TOPIC_POLICY_ID = "AlarmTopic", "AlarmEmail", "AlarmTopicPolicy"
APIGW_ROLE_ID, APIGW_ACCOUNT_ID = "ApiGatewayCloudWatchRole", "ApiGatewayAccount"
DASHBOARD_ID = "Dashboard"
DLQ_ID, DLQ_ALARM_ID, FANOUT_ID = "FanoutFailures", "FanoutFailuresAlarm", "Fanout"
METRO = [{"Name": catalog.SERVICE_DIMENSION, "Value": catalog.SERVICE}]  # Powertools' dimension of every metric
# the retentions CloudWatch Logs accepts, in days
RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288,
                  3653)


@dataclass(frozen=True)
class Thresholds:
    """When each alarm fires (docs/operations.md says why these)."""

    iterator_age_ms: int = 180_000  # fan-out 3 minutes behind the stream (records expire to the DLQ at 10)
    api_5xx_rate: float = 0.01  # 1 % of an API's requests answered 5xx ...
    api_latency_p99_ms: int = 15_000  # ... or its p99 above 15 s (a long pull waits up to 10 s by design)
    dynamodb_user_errors: int = 10  # DynamoDB 400s per 5 minutes, in the region (UserErrors has no table)
    unacked_age_seconds: int = 3600  # a pull or push hands out a message published an hour ago
    push_failure_rate_percent: float = 25.0  # a quarter of the pushes not acknowledged (the batches' average)
    seek_stuck_seconds: int = 1920  # a running seek that has not moved for twice the seek lease (960 s)


def _alarm(name: str, description: str, actions: list[Any], *, threshold: float, period: int = 300,
           evaluations: int = 1, datapoints: int | None = None, comparison: str = "GreaterThanThreshold",
           missing: str = "notBreaching", **metric: Any) -> Template:
    """An alarm on one metric (``metric``: Namespace, MetricName, Dimensions, Statistic or ExtendedStatistic),
    telling ``actions`` when it fires and when it ends. No metric math and no Metrics Insights query: the
    rehearsal's emulator (ministack, infra/rehearse.py) refuses an alarm's ``Metrics``."""
    props: Template = {"AlarmName": name, "AlarmDescription": f"{description} (docs/operations.md)",
                       "Threshold": threshold, "ComparisonOperator": comparison, "EvaluationPeriods": evaluations,
                       "DatapointsToAlarm": datapoints or evaluations, "TreatMissingData": missing,
                       "AlarmActions": actions, "OKActions": actions, "Period": period, **metric}
    return {"Type": "AWS::CloudWatch::Alarm", "Properties": props}


def _functions(resources: Template) -> dict[str, str]:
    """Logical id -> function name of every function of the template (merge named them)."""
    return {logical_id: res["Properties"]["FunctionName"] for logical_id, res in resources.items()
            if res["Type"] == "AWS::Serverless::Function"}


def _function_alarms(functions: dict[str, str], actions: list[Any], t: Thresholds) -> Template:
    out: Template = {}
    for logical_id, function in functions.items():
        dims = [{"Name": "FunctionName", "Value": function}]
        out[f"{logical_id}ErrorsAlarm"] = _alarm(
            f"{function}-errors", f"Invocations of {function} that failed", actions, threshold=0,
            Namespace="AWS/Lambda", MetricName="Errors", Dimensions=dims, Statistic="Sum")
        out[f"{logical_id}ThrottlesAlarm"] = _alarm(
            f"{function}-throttles", f"{function} throttled for 15 minutes", actions, threshold=0, evaluations=3,
            Namespace="AWS/Lambda", MetricName="Throttles", Dimensions=dims, Statistic="Sum")
    fanout = functions[FANOUT_ID]
    out["FanoutIteratorAgeAlarm"] = _alarm(
        f"{fanout}-iterator-age", "Fan-out behind the messages table's stream", actions,
        threshold=t.iterator_age_ms, period=60, evaluations=2, Namespace="AWS/Lambda", MetricName="IteratorAge",
        Dimensions=[{"Name": "FunctionName", "Value": fanout}], Statistic="Maximum")
    return out


def _api_alarms(apis: list[Api], actions: list[Any], t: Thresholds) -> Template:
    out: Template = {}
    for api in apis:
        dims = [{"Name": api.dimension, "Value": api.value}]
        out[f"{api.logical_id}5xxAlarm"] = _alarm(
            f"{api.name}-5xx", f"API {api.name} answering 5xx", actions, threshold=t.api_5xx_rate, evaluations=3,
            datapoints=2, Namespace="AWS/ApiGateway", MetricName=api.server_errors, Dimensions=dims,
            Statistic="Average")
        out[f"{api.logical_id}LatencyAlarm"] = _alarm(
            f"{api.name}-latency-p99", f"API {api.name} slow (p99)", actions, threshold=t.api_latency_p99_ms,
            evaluations=3, Namespace="AWS/ApiGateway", MetricName="Latency", Dimensions=dims, ExtendedStatistic="p99")
    return out


def _storage_alarms(names: StageNames, actions: list[Any], t: Thresholds) -> Template:
    out: Template = {}
    for table in names.tables:  # the storage stack's tables (infra/resources.json)
        logical = "".join(part.capitalize() for part in table.removeprefix(f"{names.prefix}-").split("-"))
        for kind in ("Read", "Write"):  # per table (ThrottledRequests is per table and operation: the dashboard's)
            out[f"{logical}Table{kind}ThrottlesAlarm"] = _alarm(
                f"{table}-{kind.lower()}-throttled", f"{kind}s of table {table} throttled", actions, threshold=0,
                evaluations=3, datapoints=2, Namespace="AWS/DynamoDB", MetricName=f"{kind}ThrottleEvents",
                Dimensions=[{"Name": "TableName", "Value": table}], Statistic="Sum")
    out["DynamoDbUserErrorsAlarm"] = _alarm(
        f"{names.prefix}-dynamodb-user-errors", "DynamoDB requests refused as invalid (region-wide: UserErrors has "
        "no table dimension)", actions, threshold=t.dynamodb_user_errors, evaluations=3, datapoints=2,
        Namespace="AWS/DynamoDB", MetricName="UserErrors", Statistic="Sum")
    out[DLQ_ALARM_ID] = _alarm(
        f"{names.dlq}-not-empty", "Stream records the fan-out could not deliver (redrive them)", actions,
        threshold=0, Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": {"Fn::GetAtt": [DLQ_ID, "QueueName"]}}], Statistic="Maximum")
    return out


def _metro_alarms(names: StageNames, actions: list[Any], t: Thresholds) -> Template:
    def metro(name: str, stat: str = "Sum") -> dict[str, Any]:
        return {"Namespace": catalog.NAMESPACE, "MetricName": name, "Dimensions": METRO, "Statistic": stat}

    return {
        # Subscription queues come and go at run time (a template cannot name them): Metro reports the age of the
        # oldest message each pull and push hands out.
        "OldestUnackedAlarm": _alarm(
            f"{names.prefix}-oldest-unacked-age", "A subscription's consumers are handed messages this old", actions,
            threshold=t.unacked_age_seconds, evaluations=3, **metro(catalog.OLDEST_UNACKED_AGE, "Maximum")),
        "PushFailureRateAlarm": _alarm(
            f"{names.prefix}-push-failure-rate", "Push endpoints not acknowledging", actions,
            threshold=t.push_failure_rate_percent, evaluations=3, **metro(catalog.PUSH_FAILURE_RATE, "Average")),
        "MaintenanceHeartbeatAlarm": _alarm(
            f"{names.prefix}-maintenance-missing", "No maintenance run ended well for 15 minutes", actions,
            threshold=1, evaluations=3, comparison="LessThanThreshold", missing="breaching",
            **metro(catalog.MAINTENANCE_HEARTBEAT)),
        "StuckSeekAlarm": _alarm(
            f"{names.prefix}-seek-stuck", "A background seek has not moved", actions, threshold=t.seek_stuck_seconds,
            **metro(catalog.SEEK_PROGRESS_AGE, "Maximum")),
    }


def _log_group(name: Any, days: int) -> Template:
    return {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete",
            "Properties": {"LogGroupName": name, "RetentionInDays": days}}


def _logs_and_tracing(resources: Template, names: StageNames, functions: dict[str, str], apis: list[Api],
                      days: int) -> Template:
    out: Template = {}
    for logical_id, function in functions.items():
        props = resources[logical_id]["Properties"]
        props["Tracing"] = "Active"
        out[f"{logical_id}LogGroup"] = _log_group(f"/aws/lambda/{function}", days)
        depends = resources[logical_id].setdefault("DependsOn", [])
        resources[logical_id]["DependsOn"] = [*([depends] if isinstance(depends, str) else depends),
                                              f"{logical_id}LogGroup"]
    needs_role = False
    for api in apis:
        group = f"{api.logical_id}AccessLogGroup"
        out[group] = _log_group(f"/metro/{names.stage}/{api.name}-access", days)
        if api_monitoring.set_access_log(resources, api, group):
            resources[api.logical_id]["DependsOn"] = [APIGW_ACCOUNT_ID]
            needs_role = True
    if not needs_role:
        return out
    out[APIGW_ROLE_ID] = {
        "Type": "AWS::IAM::Role", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
        "Properties": {
            "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "apigateway.amazonaws.com"}, "Action": "sts:AssumeRole"}]},
            "ManagedPolicyArns": [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/"
                                              "AmazonAPIGatewayPushToCloudWatchLogs"}]}}
    out[APIGW_ACCOUNT_ID] = {"Type": "AWS::ApiGateway::Account",
                             "Properties": {"CloudWatchRoleArn": {"Fn::GetAtt": [APIGW_ROLE_ID, "Arn"]}}}
    return out


def _topic(names: StageNames, alarm_email: str) -> Template:
    out: Template = {TOPIC_ID: {"Type": "AWS::SNS::Topic", "Properties": {
        "TopicName": f"{names.prefix}-alarms", "DisplayName": f"Metro {names.stage} alarms"}}}
    # The account's own alarms, and its EventBridge rules (the Spark jobs' failed runs, infra/emr/serverless.py,
    # when given this topic as AlarmTopicArn), may publish to it.
    out[TOPIC_POLICY_ID] = {"Type": "AWS::SNS::TopicPolicy", "Properties": {
        "Topics": [{"Ref": TOPIC_ID}], "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
            "Sid": "AccountServices", "Effect": "Allow",
            "Principal": {"Service": ["cloudwatch.amazonaws.com", "events.amazonaws.com"]},
            "Action": "sns:Publish", "Resource": {"Ref": TOPIC_ID},
            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}}]}}}
    if alarm_email:
        out[EMAIL_ID] = {"Type": "AWS::SNS::Subscription", "Properties": {
            "TopicArn": {"Ref": TOPIC_ID}, "Protocol": "email", "Endpoint": alarm_email}}
    return out


ALARMS = ("<function>ErrorsAlarm", "<function>ThrottlesAlarm", "FanoutIteratorAgeAlarm", "<api>5xxAlarm",
          "<api>LatencyAlarm", "<table>TableReadThrottlesAlarm", "<table>TableWriteThrottlesAlarm",
          "DynamoDbUserErrorsAlarm", DLQ_ALARM_ID, "OldestUnackedAlarm", "PushFailureRateAlarm",
          "MaintenanceHeartbeatAlarm", "StuckSeekAlarm")


def _metrics(api: Api) -> ApiMetrics:
    return ApiMetrics(api.dimension, api.dashboard_value, api.server_errors, api.client_errors)


def add(out: Template, stage: str, alarm_topic_arn: str = "", alarm_email: str = "", log_retention_days: int = 30,
        thresholds: Thresholds | None = None) -> None:
    """Add tracing, log groups, access logs, the alarm topic, the alarms and the dashboard to the merged template
    (after the AMS API is in it)."""
    if log_retention_days not in RETENTION_DAYS:
        raise ValueError(f"log_retention_days must be one of {RETENTION_DAYS}, not {log_retention_days}")
    names, t = StageNames(stage), thresholds or Thresholds()
    resources = out["Resources"]
    functions = _functions(resources)
    apis = api_monitoring.apis(resources, names)
    added: Template = {}
    if not alarm_topic_arn:
        added.update(_topic(names, alarm_email))
    actions: list[Any] = [alarm_topic_arn or {"Ref": TOPIC_ID}]
    added.update(_logs_and_tracing(resources, names, functions, apis, log_retention_days))
    added.update(_function_alarms(functions, actions, t))
    added.update(_api_alarms(apis, actions, t))
    added.update(_storage_alarms(names, actions, t))
    added.update(_metro_alarms(names, actions, t))
    alarms = [logical_id for logical_id, res in added.items() if res["Type"] == "AWS::CloudWatch::Alarm"]
    added[DASHBOARD_ID] = {"Type": "AWS::CloudWatch::Dashboard", "Properties": {
        "DashboardName": names.prefix,
        "DashboardBody": dashboard_body(names, list(functions), [_metrics(api) for api in apis], alarms)}}
    resources.update(added)
    out.setdefault("Outputs", {})["DashboardURL"] = {"Value": {"Fn::Sub": (
        "https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home?region=${AWS::Region}#dashboards:name="
        f"{names.prefix}")}}
    if not alarm_topic_arn:
        out["Outputs"]["AlarmTopicArn"] = {"Value": {"Ref": TOPIC_ID}}
