"""The AMS dialect's deployed endpoint: a second API Gateway API, the same Lambda handler and routes, whose
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
