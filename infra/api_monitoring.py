"""What infra/observability.py needs to know of each front door (pure): which APIs the template holds, how
CloudWatch names their metrics, and where and in which format their access logs are set.

* REST APIs (``--front-door rest``, infra/ams_stage.py): namespace ``AWS/ApiGateway``, dimension ``ApiName``,
  metrics ``5XXError``, ``4XXError``, ``Count``, ``Latency``; access logs and X-Ray tracing on the SAM API;
  logging needs the account's API Gateway CloudWatch role.
* HTTP APIs (the default, infra/http_api.py): the same namespace, dimension ``ApiId`` (the API's ``Ref``),
  metrics ``5xx``, ``4xx``, ``Count``, ``Latency``; access logs on the ``$default`` stage (no X-Ray at an HTTP API
  gateway: Lambda's own tracing stays); no account role needed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from infra import http_api
from infra.ams_stage import AMS_API_ID, API_ID
from infra.names import StageNames

Template = dict[str, Any]
REST_APIS = {API_ID: "", AMS_API_ID: "-ams"}  # logical id -> the suffix of its name
_COMMON_FIELDS = {
    "requestId": "$context.requestId", "extendedRequestId": "$context.extendedRequestId",
    "requestTime": "$context.requestTime", "ip": "$context.identity.sourceIp",
    "userAgent": "$context.identity.userAgent", "httpMethod": "$context.httpMethod", "path": "$context.path",
    "status": "$context.status", "protocol": "$context.protocol", "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency", "integrationLatency": "$context.integrationLatency",
    "integrationStatus": "$context.integrationStatus", "error": "$context.error.message"}
# API Gateway's access log lines: no query string ($context.path has none), no header, no API key
ACCESS_LOG_FORMAT = json.dumps({**_COMMON_FIELDS, "resourcePath": "$context.resourcePath",
                                "xrayTraceId": "$context.xrayTraceId"}, separators=(",", ":"))
HTTP_ACCESS_LOG_FORMAT = json.dumps({**_COMMON_FIELDS, "routeKey": "$context.routeKey",
                                     "integrationError": "$context.integrationErrorMessage"}, separators=(",", ":"))


@dataclass(frozen=True)
class Api:
    """One API of the template as CloudWatch knows it."""

    logical_id: str
    name: str
    dimension: str  # ApiName (REST) or ApiId (HTTP)
    value: Any  # the name, or the API's Ref
    dashboard_value: str  # the same inside the dashboard's Fn::Sub
    server_errors: str  # 5XXError or 5xx
    client_errors: str  # 4XXError or 4xx


def is_http(resources: Template) -> bool:
    return http_api.API_ID in resources


def apis(resources: Template, names: StageNames) -> list[Api]:
    """The template's APIs, Google's first."""
    if is_http(resources):
        return [Api(i, f"{names.prefix}{suffix}", "ApiId", {"Ref": i}, f"${{{i}}}", "5xx", "4xx")
                for i, suffix in http_api.APIS.items()]
    return [Api(i, f"{names.prefix}{suffix}", "ApiName", f"{names.prefix}{suffix}", f"{names.prefix}{suffix}",
                "5XXError", "4XXError") for i, suffix in REST_APIS.items()]


def set_access_log(resources: Template, api: Api, group_id: str) -> bool:
    """Point ``api``'s access log at the log group ``group_id`` (and name and trace a REST API); whether the API
    needs the account's API Gateway CloudWatch role for it."""
    destination = {"Fn::GetAtt": [group_id, "Arn"]}
    if is_http(resources):
        stage = resources[http_api.stage_id(api.logical_id)]["Properties"]
        stage["AccessLogSettings"] = {"DestinationArn": destination, "Format": HTTP_ACCESS_LOG_FORMAT}
        return False
    resources[api.logical_id]["Properties"].update({"Name": api.name, "TracingEnabled": True, "AccessLogSetting": {
        "DestinationArn": destination, "Format": ACCESS_LOG_FORMAT}})
    return True
