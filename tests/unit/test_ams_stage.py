"""The deployed AMS endpoint: a second API of the same handler whose stage selects the AMS dialect."""

from __future__ import annotations

from typing import Any

from chalicelib.api.dialect import STAGE_VARIABLE, Dialect, dialect_of
from infra import template
from infra.ams_stage import AMS_API_ID, AMS_PERMISSION_ID, API_ID
from tests.unit.packaged import packaged_template

SETTINGS = template.Settings("dev", "metro-dev-123456789012-us-east-1", "deploy/dev/app-0123.zip")


def test_the_ams_api_is_chalices_api_with_the_dialects_stage_variable() -> None:
    merged: dict[str, Any] = template.merge(packaged_template(), SETTINGS)
    resources = merged["Resources"]
    google, ams = resources[API_ID]["Properties"], resources[AMS_API_ID]["Properties"]
    assert ams["Variables"] == {STAGE_VARIABLE: Dialect.AMS.value} and "Variables" not in google
    assert ams["DefinitionBody"] == google["DefinitionBody"]  # every route, the same handler
    source = resources[AMS_PERMISSION_ID]["Properties"]["SourceArn"]["Fn::Sub"][1]
    assert source == {"RestAPIId": {"Ref": AMS_API_ID}}
    assert resources["APIHandlerInvokePermission"]["Properties"]["SourceArn"]["Fn::Sub"][1] == {
        "RestAPIId": {"Ref": API_ID}}
    assert "AmsEndpointURL" in merged["Outputs"]


def test_the_dialect_is_the_stage_variable_and_nothing_else() -> None:
    assert dialect_of({"dialect": "ams"}) is Dialect.AMS
    assert dialect_of(None) is Dialect.GOOGLE and dialect_of({}) is Dialect.GOOGLE
    assert dialect_of({"dialect": "AMS "}) is Dialect.GOOGLE and dialect_of({"other": "ams"}) is Dialect.GOOGLE
