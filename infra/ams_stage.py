"""The AMS dialect's deployed endpoint behind the REST front door (``--front-door rest``; infra/http_api.py is the
default's): a second API Gateway API, the same Lambda handler and routes, whose
stage carries the stage variable ``dialect=ams`` (chalicelib/api/dialect.py reads it). API Gateway is https
only, as argo-ams-library needs; a custom domain can map a host name to it (a base path would not do: the
library cannot send a path prefix)."""

from __future__ import annotations

import copy
from typing import Any

API_ID, AMS_API_ID = "RestAPI", "AmsRestAPI"
PERMISSION_ID, AMS_PERMISSION_ID = "APIHandlerInvokePermission", "AmsAPIHandlerInvokePermission"

Template = dict[str, Any]


def add_ams_api(resources: Template, outputs: Template) -> None:
    """Add the AMS API (a copy of Chalice's, with the dialect's stage variable), its invoke permission and its
    URL output."""
    api = copy.deepcopy(resources[API_ID])
    api["Properties"]["Variables"] = {"dialect": "ams"}
    resources[AMS_API_ID] = api
    permission = copy.deepcopy(resources[PERMISSION_ID])
    permission["Properties"]["SourceArn"]["Fn::Sub"][1] = {"RestAPIId": {"Ref": AMS_API_ID}}
    resources[AMS_PERMISSION_ID] = permission
    stage = api["Properties"]["StageName"]
    outputs["AmsEndpointURL"] = {"Value": {"Fn::Sub": f"https://${{{AMS_API_ID}}}.execute-api.${{AWS::Region}}."
                                                    f"${{AWS::URLSuffix}}/{stage}/"}}


AMS_DOMAIN_ID, AMS_MAPPING_ID = "AmsDomainName", "AmsBasePathMapping"


def add_domain_name(resources: Template, outputs: Template, domain: str, certificate_arn: str) -> str:
    """A regional custom domain (the ACM certificate of ``domain``, in the stage's region) and its outputs; its
    logical id. The ``AmsDomainTarget`` output is the name a DNS CNAME (or a Route 53 alias) of ``domain`` points
    at. REST and HTTP APIs share custom domain names, so either front door maps its AMS API to this one."""
    resources[AMS_DOMAIN_ID] = {"Type": "AWS::ApiGateway::DomainName", "Properties": {
        "DomainName": domain, "RegionalCertificateArn": certificate_arn, "SecurityPolicy": "TLS_1_2",
        "EndpointConfiguration": {"Types": ["REGIONAL"]}}}
    outputs["AmsDomainTarget"] = {"Value": {"Fn::GetAtt": [AMS_DOMAIN_ID, "RegionalDomainName"]}}
    outputs["AmsDomainURL"] = {"Value": f"https://{domain}/"}
    return AMS_DOMAIN_ID


def add_ams_domain(resources: Template, outputs: Template, domain: str, certificate_arn: str) -> None:
    """The AMS API at ``https://{domain}/v1/...``, as argo-ams-library calls it: the custom domain mapped, with no
    base path, to the AMS REST API's stage."""
    stage = resources[AMS_API_ID]["Properties"]["StageName"]
    add_domain_name(resources, outputs, domain, certificate_arn)
    resources[AMS_MAPPING_ID] = {
        "Type": "AWS::ApiGateway::BasePathMapping",
        "DependsOn": [f"{AMS_API_ID}{stage}Stage"],  # SAM's logical id of the API's stage
        "Properties": {"DomainName": {"Ref": AMS_DOMAIN_ID}, "RestApiId": {"Ref": AMS_API_ID}, "Stage": stage}}
