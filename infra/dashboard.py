"""The stage's CloudWatch dashboard ``metro-<stage>`` (pure): the metrics infra/observability.py's alarms watch, the
alarms' state, and the last errors of the functions' JSON logs. docs/operations.md names each widget.

Functions and alarms are named through ``Fn::Sub`` (``${Fanout}``, ``${FanoutFailuresAlarm.Arn}``), so the template
links the dashboard to each (the policy check CKV2_METRO_1 follows those links)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from chalicelib.observability import catalog
from infra.names import StageNames

PERIOD = 300
METRO = [catalog.SERVICE_DIMENSION, catalog.SERVICE]


@dataclass(frozen=True)
class ApiMetrics:
    """How CloudWatch names one API's metrics: ``ApiName`` and ``5XXError`` for a REST API, ``ApiId`` and ``5xx``
    for an HTTP API (infra/api_monitoring.py)."""

    dimension: str
    value: str
    server_errors: str
    client_errors: str

    def metric(self, name: str) -> list[Any]:
        return _metric("AWS/ApiGateway", name, self.dimension, self.value)


def _metric(namespace: str, name: str, *dimensions: str, **options: Any) -> list[Any]:
    return [namespace, name, *dimensions, *([options] if options else [])]


def _metro(name: str, **options: Any) -> list[Any]:
    return _metric(catalog.NAMESPACE, name, *METRO, **options)


def _widget(title: str, metrics: list[list[Any]], stat: str = "Sum", width: int = 12, **extra: Any) -> dict[str, Any]:
    return {"type": "metric", "width": width, "height": 6, "properties": {
        "title": title, "region": "${AWS::Region}", "period": PERIOD, "stat": stat, "view": "timeSeries",
        "metrics": metrics, **extra}}


def _expression(expression: str, label: str, metric_id: str) -> list[Any]:
    return [{"expression": expression, "label": label, "id": metric_id}]


def widgets(names: StageNames, functions: list[str], apis: list[ApiMetrics], alarms: list[str]) -> list[dict[str, Any]]:
    """Every widget, top to bottom (titles are what docs/operations.md refers to); ``functions`` and ``alarms`` are
    logical ids."""
    fanout, fns = "${Fanout}", [f"${{{f}}}" for f in functions]
    ops = catalog.OPERATIONS
    log_sources = " | ".join(f"SOURCE '/aws/lambda/{f}'" for f in fns)
    return [
        {"type": "text", "width": 24, "height": 2, "properties": {"markdown": (
            f"# Metro {names.stage}\nRunbook: docs/operations.md, one section per alarm. Metrics: namespace "
            f"`{catalog.NAMESPACE}`, dimension `{catalog.SERVICE_DIMENSION}={catalog.SERVICE}`.")}},
        {"type": "alarm", "width": 24, "height": 4, "properties": {
            "title": "Alarms", "alarms": [f"${{{a}.Arn}}" for a in sorted(alarms)]}},
        _widget("API requests and 5xx", [m for api in apis for m in (
            api.metric("Count"), api.metric(api.server_errors), api.metric(api.client_errors))]),
        _widget("API latency p99", [api.metric("Latency") for api in apis], "p99"),
        _widget("Publish, pull, acknowledge: requests and messages",
                [_metro(catalog.requests(op)) for op in ops] + [_metro(catalog.messages(op)) for op in ops]),
        _widget("Latency p99 by operation (ms)", [_metro(catalog.latency(op)) for op in ops]
                + [_metro(catalog.PUSH_LATENCY)], "p99"),
        _widget("Server errors by operation", [_metro(catalog.errors(op)) for op in ops]),
        _widget("Push deliveries and failure rate", [
            _metro(catalog.PUSH_DELIVERIES), _metro(catalog.PUSH_FAILURES),
            _metro(catalog.PUSH_FAILURE_RATE, stat="Average", yAxis="right", label="failure rate (%)")]),
        _widget("Fan-out: iterator age (ms) and DLQ depth", [
            _metric("AWS/Lambda", "IteratorAge", "FunctionName", fanout, stat="Maximum"),
            _metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "${Dlq}", stat="Maximum",
                    yAxis="right")]),
        _widget("Oldest unacknowledged message (s): handed out, and the 10 oldest queues", [
            _metro(catalog.OLDEST_UNACKED_AGE, stat="Maximum", label="oldest handed out (Metro)"),
            _expression(f"SORT(SEARCH('{{AWS/SQS,QueueName}} MetricName=\"ApproximateAgeOfOldestMessage\" "
                        f"{names.queue_prefix}', 'Maximum', {PERIOD}), MAX, DESC, 10)", "", "oldest")], "Maximum"),
        _widget("Lambda errors and throttles", [m for f in fns for m in (
            _metric("AWS/Lambda", "Errors", "FunctionName", f), _metric("AWS/Lambda", "Throttles", "FunctionName", f))],
                width=24),
        _widget("DynamoDB throttled requests and user errors", [
            *(_metric("AWS/DynamoDB", f"{kind}ThrottleEvents", "TableName", table)
              for table in names.tables for kind in ("Read", "Write")),
            *(_expression(f'SELECT SUM(ThrottledRequests) FROM SCHEMA("AWS/DynamoDB", Operation, TableName) '
                          f"WHERE TableName = '{table}'", f"{table} throttled requests", f"t{i}")
              for i, table in enumerate(names.tables)),
            _metric("AWS/DynamoDB", "UserErrors")], width=24),
        _widget("Maintenance runs and seeks", [
            _metro(catalog.MAINTENANCE_HEARTBEAT), _metro(catalog.SEEK_RUNNING, stat="Maximum"),
            _metro(catalog.SEEK_STALLED), _metro(catalog.SEEK_PROGRESS_AGE, stat="Maximum", yAxis="right")]),
        {"type": "log", "width": 24, "height": 6, "properties": {
            "title": "Recent errors (JSON logs)", "region": "${AWS::Region}", "view": "table",
            "query": f"{log_sources} | fields @timestamp, function_name, level, correlation_id, message "
                     "| filter level in ['ERROR', 'CRITICAL'] | sort @timestamp desc | limit 50"}},
    ]


def dashboard_body(names: StageNames, functions: list[str], apis: list[ApiMetrics],
                   alarms: list[str]) -> dict[str, Any]:
    """The dashboard's JSON, with the region, account and the fan-out DLQ's name (``${Dlq}``) filled in by
    CloudFormation."""
    body = json.dumps({"widgets": widgets(names, functions, apis, alarms)}, separators=(",", ":"))
    return {"Fn::Sub": [body, {"Dlq": {"Fn::GetAtt": ["FanoutFailures", "QueueName"]}}]}
