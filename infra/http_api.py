"""The default front door (docs/decisions/front-door.md): an API Gateway HTTP API per dialect in place of the REST
API ``chalice package`` writes. Pure: :func:`add` rewrites the merged template.

Per dialect (Google's, AMS's): an ``AWS::ApiGatewayV2::Api`` of protocol HTTP, one Lambda proxy ``Integration``
(payload 2.0, 30 s) behind a ``$default`` route, a ``$default`` stage (its URL serves paths from ``/``, as the AMS
library needs) deploying itself, with route throttling, and the permission for API Gateway to invoke the API
function. The function's entry point becomes ``app.handler`` (chalicelib/api/front_door.py turns the 2.0 event
back into the REST event Chalice dispatches), and it learns the AMS API's id (``METRO_AMS_API_ID``): that id, not
a stage variable, tells the shim a request came in at the AMS endpoint. The access log settings of each stage are
infra/observability.py's.
"""

from __future__ import annotations

from typing import Any

from infra.ams_stage import add_domain_name
from infra.names import StageNames

Template = dict[str, Any]
API_ID, AMS_API_ID = "HttpApi", "AmsHttpApi"
APIS = {API_ID: "", AMS_API_ID: "-ams"}  # logical id -> the suffix of its name
FUNCTION_ID, HANDLER = "APIHandler", "app.handler"
# What the REST front door of `chalice package` brings, which the HTTP API replaces
REST_RESOURCES, REST_OUTPUTS = ("RestAPI", "APIHandlerInvokePermission"), ("RestAPIId", "EndpointURL")
TIMEOUT_MS = 30_000  # the HTTP API's hard cap on an integration
# Per stage: together the two stay within the account's 10,000 requests/s of the region, and a flood of junk paths
# (every path reaches Lambda through $default) is cut short before it costs invocations without end.
RATE_LIMIT, BURST_LIMIT = 5000.0, 2500
AMS_MAPPING_ID = "AmsApiMapping"


def stage_id(api_id: str) -> str:
    return f"{api_id}Stage"


def endpoint(api_id: str) -> Template:
    """The stage's URL, as ``GetAtt ApiEndpoint`` would give it on AWS, with the trailing slash of an endpoint."""
    return {"Fn::Sub": f"https://${{{api_id}}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}/"}


def _api(api_id: str, names: StageNames, ams: bool) -> Template:
    target = {"Fn::Join": ["/", ["integrations", {"Ref": f"{api_id}Integration"}]]}
    stage: Template = {"ApiId": {"Ref": api_id}, "StageName": "$default", "AutoDeploy": True,
                       "DefaultRouteSettings": {"ThrottlingRateLimit": RATE_LIMIT, "ThrottlingBurstLimit": BURST_LIMIT}}
    if ams:
        stage["StageVariables"] = {"dialect": "ams"}  # what AWS passes on; the shim goes by the API's id
    return {
        api_id: {"Type": "AWS::ApiGatewayV2::Api", "Properties": {
            "Name": f"{names.prefix}{APIS[api_id]}", "ProtocolType": "HTTP",
            "Description": f"Metro {names.stage}, {'AMS' if ams else 'Google Pub/Sub'} dialect"}},
        f"{api_id}Integration": {"Type": "AWS::ApiGatewayV2::Integration", "Properties": {
            "ApiId": {"Ref": api_id}, "IntegrationType": "AWS_PROXY", "PayloadFormatVersion": "2.0",
            "IntegrationUri": {"Fn::GetAtt": [FUNCTION_ID, "Arn"]}, "TimeoutInMillis": TIMEOUT_MS}},
        f"{api_id}Route": {"Type": "AWS::ApiGatewayV2::Route", "Properties": {
            "ApiId": {"Ref": api_id}, "RouteKey": "$default", "Target": target}},
        stage_id(api_id): {"Type": "AWS::ApiGatewayV2::Stage", "Properties": stage},
        f"{api_id}Permission": {"Type": "AWS::Lambda::Permission", "Properties": {
            "FunctionName": {"Ref": FUNCTION_ID}, "Action": "lambda:InvokeFunction",
            "Principal": "apigateway.amazonaws.com",
            "SourceArn": {"Fn::Sub": f"arn:${{AWS::Partition}}:execute-api:${{AWS::Region}}:${{AWS::AccountId}}:"
                                     f"${{{api_id}}}/*"}}},
    }


def add(out: Template, stage: str) -> None:
    """Replace the REST API of the packaged template with the two HTTP APIs, their URLs as ``EndpointURL`` and
    ``AmsEndpointURL``."""
    names, resources, outputs = StageNames(stage), out["Resources"], out.setdefault("Outputs", {})
    for logical_id in REST_RESOURCES:
        resources.pop(logical_id, None)
    for key in REST_OUTPUTS:
        outputs.pop(key, None)
    for api_id in APIS:
        resources.update(_api(api_id, names, api_id == AMS_API_ID))
    function = resources[FUNCTION_ID]["Properties"]
    function["Handler"] = HANDLER
    function.setdefault("Environment", {}).setdefault("Variables", {})["METRO_AMS_API_ID"] = {"Ref": AMS_API_ID}
    outputs["EndpointURL"] = {"Value": endpoint(API_ID)}
    outputs["AmsEndpointURL"] = {"Value": endpoint(AMS_API_ID)}
    outputs["HttpApiId"] = {"Value": {"Ref": API_ID}}


def add_ams_domain(out: Template, domain: str, certificate_arn: str) -> None:
    """The AMS API at ``https://{domain}/``: the regional custom domain of infra/ams_stage.py (REST and HTTP APIs
    share custom domain names), mapped to the AMS API's ``$default`` stage."""
    resources = out["Resources"]
    domain_id = add_domain_name(resources, out.setdefault("Outputs", {}), domain, certificate_arn)
    resources[AMS_MAPPING_ID] = {"Type": "AWS::ApiGatewayV2::ApiMapping", "DependsOn": [stage_id(AMS_API_ID)],
                                 "Properties": {"DomainName": {"Ref": domain_id}, "ApiId": {"Ref": AMS_API_ID},
                                                "Stage": "$default"}}
