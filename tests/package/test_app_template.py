"""The app template ``chalice package`` generates and infra/template.py merges: the fan-out mapping, the functions'
names, roles and settings, the AMS API, and cfn-lint on what the deploy submits (infra/deploy.py)."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from chalicelib.api.dialect import STAGE_VARIABLE, Dialect
from infra import fis_extension, grpc_stack, http_api, policies, template
from infra.ams_stage import AMS_API_ID, AMS_PERMISSION_ID, API_ID
from infra.names import FUNCTIONS, StageNames
from tests.package.packaged import packaged_template
from tests.unit.test_iam_policies import assert_scoped

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = template.Settings("dev", "metro-dev-123456789012-us-east-1", "deploy/dev/app-0123.zip",
                             parallelization_factor=6, reserved_concurrency={"maintenance": 1, "push": 50},
                             layer_key="deploy/dev/app-4567-pyarrow-layer.zip")
# Chalice's logical ids of the functions' roles in the packaged template
ROLE_IDS = {f: "".join(w.title() for w in f.split("_")) + "Role" for f in FUNCTIONS}  # api_handler: ApiHandlerRole


@pytest.fixture(scope="module")
def packaged() -> dict[str, Any]:
    return packaged_template()


@pytest.fixture(scope="module")
def merged(packaged: dict[str, Any]) -> dict[str, Any]:
    return template.merge(packaged, SETTINGS)


@pytest.fixture(scope="module")
def merged_rest(packaged: dict[str, Any]) -> dict[str, Any]:
    return template.merge(packaged, dataclasses.replace(SETTINGS, front_door="rest"))


def test_the_fanout_stream_mapping_reports_failures_bisects_and_keeps_what_fails(merged: dict[str, Any]) -> None:
    resources = merged["Resources"]
    assert "Events" not in resources["Fanout"]["Properties"]  # Chalice's placeholder stream event is gone
    mapping = resources[template.MAPPING_ID]["Properties"]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True and mapping["ParallelizationFactor"] == 6
    assert mapping["EventSourceArn"] == {"Fn::ImportValue": "metro-dev-storage-MessagesStreamArn"}
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [template.DLQ_ID, "Arn"]}
    assert mapping["BatchSize"] == 100 and mapping["StartingPosition"] == "TRIM_HORIZON"
    # a record holds its shard ten minutes at most; what it carried stays marked for the maintenance catch-up
    assert mapping["MaximumRecordAgeInSeconds"] == 600
    (pattern,) = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert pattern == {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"uf": {"S": [{"exists": True}]}}}}
    dlq = resources[template.DLQ_ID]
    assert dlq["DeletionPolicy"] == "Retain"
    # a retained queue is named after its stack, so that a destroy followed by a deploy finds the name free
    prefix, stack_part = dlq["Properties"]["QueueName"]["Fn::Join"][1]
    assert prefix == StageNames("dev").dlq and "AWS::StackId" in json.dumps(stack_part)
    assert not StageNames("dev").dlq.startswith(StageNames("dev").queue_prefix + "-")  # not a subscription queue
    alarm = resources[template.ALARM_ID]["Properties"]
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": [template.DLQ_ID, "QueueName"]}
    grants = resources["FanoutRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert {"Fn::GetAtt": [template.DLQ_ID, "Arn"]} in grants[-1]["Resource"]
    assert grants[-1]["Action"] == ["sqs:SendMessage"]


def test_functions_get_their_stage_names_code_and_concurrency(packaged: dict[str, Any], merged: dict[str, Any]) -> None:
    before = copy.deepcopy(packaged)
    template.merge(packaged, SETTINGS)
    assert packaged == before  # the input is not modified
    names = StageNames("dev")
    for function, logical_id in template.FUNCTION_IDS.items():
        props = merged["Resources"][logical_id]["Properties"]
        assert props["FunctionName"] == names.function(function)
        assert props["CodeUri"] == {"Bucket": SETTINGS.code_bucket, "Key": SETTINGS.code_key}
        env = props["Environment"]["Variables"]
        assert env["METRO_BUCKET"] == {"Fn::Sub": names.bucket} and env["METRO_MODE"] == "aws"
        own = {"METRO_FANOUT_FUNCTION": names.function("fanout")} if function == "fanout" else {}  # its slices
        if function == "api_handler":  # which of the HTTP APIs is the AMS dialect's (infra/http_api.py)
            own = {"METRO_AMS_API_ID": {"Ref": http_api.AMS_API_ID}}
        assert {k: v for k, v in env.items() if k not in ("METRO_BUCKET", "METRO_PUBLIC_URL")} == {
            "METRO_MODE": "aws", **{k: v for k, v in names.environment().items() if k != "METRO_BUCKET"}, **own}
        assert env["METRO_RESOURCES_TABLE"] == "metro-dev-resources" and env["METRO_QUEUE_PREFIX"] == "metro-dev"
        assert props.get("ReservedConcurrentExecutions") == SETTINGS.reserved_concurrency.get(function)
    assert merged["Resources"]["Maintenance"]["Properties"]["Events"]  # the schedule stays


def test_the_push_function_signs_tokens_as_the_stages_api(merged: dict[str, Any], merged_rest: dict[str, Any]) -> None:
    """Without it the deployed push tokens named http://127.0.0.1:8085 (the local default) as their issuer."""
    for found, url in ((merged, "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"),
                       (merged_rest, "https://${RestAPI}.execute-api.${AWS::Region}.${AWS::URLSuffix}/dev")):
        variables = {f: found["Resources"][i]["Properties"]["Environment"]["Variables"]
                     for f, i in template.FUNCTION_IDS.items()}
        assert variables["push"]["METRO_PUBLIC_URL"] == {"Fn::Sub": url}
        assert "METRO_PUBLIC_URL" not in variables["api_handler"]  # RestAPI refers to it: that would be a cycle


def test_the_default_front_door_is_an_http_api_per_dialect(merged: dict[str, Any]) -> None:
    resources = merged["Resources"]
    assert "RestAPI" not in resources and "APIHandlerInvokePermission" not in resources
    assert "RestAPIId" not in merged["Outputs"]
    assert resources["APIHandler"]["Properties"]["Handler"] == "app.handler"  # the payload 2.0 shim
    for api_id in http_api.APIS:
        assert resources[api_id]["Properties"]["ProtocolType"] == "HTTP"
        integration = resources[f"{api_id}Integration"]["Properties"]
        assert (integration["IntegrationType"], integration["PayloadFormatVersion"]) == ("AWS_PROXY", "2.0")
        assert integration["TimeoutInMillis"] == 30000
        assert integration["IntegrationUri"] == {"Fn::GetAtt": ["APIHandler", "Arn"]}
        route = resources[f"{api_id}Route"]["Properties"]
        assert route["RouteKey"] == "$default" and route["Target"]["Fn::Join"][1][1] == {"Ref": f"{api_id}Integration"}
        stage = resources[http_api.stage_id(api_id)]["Properties"]
        assert (stage["StageName"], stage["AutoDeploy"]) == ("$default", True)
        assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] > 0
        source = resources[f"{api_id}Permission"]["Properties"]["SourceArn"]["Fn::Sub"]
        assert source.endswith(f":${{{api_id}}}/*")
    assert merged["Outputs"]["EndpointURL"]["Value"] == http_api.endpoint(http_api.API_ID)
    assert merged["Outputs"]["AmsEndpointURL"]["Value"] == http_api.endpoint(http_api.AMS_API_ID)


def test_the_ams_rest_api_is_chalices_api_with_the_dialects_stage_variable(merged_rest: dict[str, Any]) -> None:
    resources = merged_rest["Resources"]
    google, ams = resources[API_ID]["Properties"], resources[AMS_API_ID]["Properties"]
    assert ams["Variables"] == {STAGE_VARIABLE: Dialect.AMS.value} and "Variables" not in google
    assert ams["DefinitionBody"] == google["DefinitionBody"]  # every route, the same handler
    source = resources[AMS_PERMISSION_ID]["Properties"]["SourceArn"]["Fn::Sub"][1]
    assert source == {"RestAPIId": {"Ref": AMS_API_ID}}
    assert resources["APIHandlerInvokePermission"]["Properties"]["SourceArn"]["Fn::Sub"][1] == {
        "RestAPIId": {"Ref": API_ID}}
    assert "AmsEndpointURL" in merged_rest["Outputs"]
    assert resources["APIHandler"]["Properties"]["Handler"] == "app.app"  # Chalice's own, as packaged


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_packaged_template_gives_each_function_its_own_scoped_role(
    packaged: dict[str, Any], function: str
) -> None:
    role = packaged["Resources"][ROLE_IDS[function]]
    docs = [p["PolicyDocument"] for p in role["Properties"]["Policies"]]
    assert docs == [policies.policy("dev", function)]
    assert_scoped("dev", docs[0])
    roles = {res["Properties"]["Role"]["Fn::GetAtt"][0] for res in packaged["Resources"].values()
             if res["Type"] == "AWS::Serverless::Function"}
    assert roles == set(ROLE_IDS.values())


# --- cfn-lint on the templates the deploy submits ------------------------------------------------


def cfn_lint(path: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("cfn-lint is not installed (requirements-dev.txt pins it)")
    return subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=300, check=False)


def test_cfn_lint_is_clean_on_the_storage_template() -> None:
    done = cfn_lint(ROOT / "infra" / "resources.json")
    assert done.returncode == 0, done.stdout + done.stderr


def test_cfn_lint_is_clean_on_the_merged_app_template(merged: dict[str, Any], merged_rest: dict[str, Any],
                                                      tmp_path: Path) -> None:
    for name, found in (("app.json", merged), ("app-rest.json", merged_rest)):
        path = tmp_path / name
        path.write_text(json.dumps(found))
        done = cfn_lint(path)
        assert done.returncode == 0, name + done.stdout + done.stderr


def test_the_fis_extension_goes_only_on_the_targeted_functions_and_only_when_asked(
        packaged: dict[str, Any], merged: dict[str, Any], tmp_path: Path) -> None:
    with_fis = template.merge(packaged, dataclasses.replace(SETTINGS, fis_extension=True))
    resources, names = with_fis["Resources"], StageNames("dev")
    assert fis_extension.TARGETED == ("api_handler", "fanout", "push")
    for function in FUNCTIONS:
        props, before = (r[template.FUNCTION_IDS[function]]["Properties"] for r in (resources, merged["Resources"]))
        statements = resources[ROLE_IDS[function]]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        if function in fis_extension.TARGETED:
            assert props["Layers"] == [*before.get("Layers", []), fis_extension.LAYER]  # the pyarrow layer kept
            assert props["Environment"]["Variables"] == {**before["Environment"]["Variables"],
                                                         **fis_extension.variables(names)}
            assert all(st in statements for st in fis_extension.read_statements(names))
        else:
            assert props == before
            assert fis_extension.SID not in {st.get("Sid") for st in statements}
    assert not any(fis_extension.LAYER in json.dumps(r) for r in merged["Resources"].values())  # off by default
    path = tmp_path / "app-fis.json"
    path.write_text(json.dumps(with_fis))
    done = cfn_lint(path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_cfn_lint_finds_the_packaged_template_wrong_before_the_merge(packaged: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "sam.json"  # the control: what the merge fixes is really wrong in Chalice's output
    path.write_text(json.dumps(packaged))
    done = cfn_lint(path)
    assert done.returncode != 0 and "E3017" in done.stdout  # the placeholder stream ARN


# --- the opt-in gRPC edge stack (infra/grpc_stack.py) -----------------------------------------------

GRPC_SETTINGS = grpc_stack.Settings("dev", "123456789012.dkr.ecr.us-east-1.amazonaws.com/metro-grpc-edge:1")


def test_cfn_lint_is_clean_on_the_grpc_edge_template(tmp_path: Path) -> None:
    for settings in (GRPC_SETTINGS, grpc_stack.Settings("prod", "ghcr.io/example/metro-grpc-edge:1", cpu=512,
                                                        memory=1024, max_tasks=10, assign_public_ip=False)):
        path = tmp_path / f"grpc-{settings.stage}.json"
        path.write_text(json.dumps(grpc_stack.build(settings)))
        done = cfn_lint(path)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_grpc_edge_task_gets_the_api_functions_environment(merged: dict[str, Any]) -> None:
    """What the deploy gives the API function is what the gRPC stack gives its task, plus its region (Lambda sets a
    function's) and the edge's own settings: the task reads the stage's configuration as the function does."""
    function = merged["Resources"][template.FUNCTION_IDS["api_handler"]]["Properties"]["Environment"]["Variables"]
    [container] = grpc_stack.build(GRPC_SETTINGS)["Resources"]["TaskDefinition"]["Properties"]["ContainerDefinitions"]
    task = {e["Name"]: e["Value"] for e in container["Environment"]}
    edge_own = {"AWS_REGION", "METRO_GRPC_PORT", "METRO_GRPC_WORKERS", "METRO_GRPC_GRACE_SECONDS"}
    http_only = {"METRO_AMS_API_ID"}  # which API Gateway API is AMS's: nothing the gRPC edge serves
    assert {k: v for k, v in task.items() if k not in edge_own} == {
        k: v for k, v in function.items() if k not in http_only}


def test_the_ams_dialect_gets_its_own_host_name_when_asked(packaged: dict[str, Any]) -> None:
    from infra.ams_stage import AMS_DOMAIN_ID, AMS_MAPPING_ID

    plain = template.merge(packaged, SETTINGS)
    assert AMS_DOMAIN_ID not in plain["Resources"]
    cert = "arn:aws:acm:us-east-1:123456789012:certificate/abc"
    merged = template.merge(packaged, dataclasses.replace(SETTINGS, ams_domain="ams.example.org",
                                                          ams_certificate_arn=cert, front_door="rest"))
    domain = merged["Resources"][AMS_DOMAIN_ID]["Properties"]
    assert domain["DomainName"] == "ams.example.org" and domain["RegionalCertificateArn"] == cert
    mapping = merged["Resources"][AMS_MAPPING_ID]
    assert "BasePath" not in mapping["Properties"]  # argo-ams-library cannot send a path prefix
    assert mapping["Properties"]["RestApiId"] == {"Ref": AMS_API_ID}
    (stage_id,) = mapping["DependsOn"]
    assert stage_id in sam_translated(merged)["Resources"]  # the stage SAM makes of the API, by that very id
    assert merged["Outputs"]["AmsDomainTarget"]["Value"] == {"Fn::GetAtt": [AMS_DOMAIN_ID, "RegionalDomainName"]}


def test_the_ams_http_api_is_mapped_to_the_same_kind_of_host_name(packaged: dict[str, Any], tmp_path: Path) -> None:
    from infra.ams_stage import AMS_DOMAIN_ID

    cert = "arn:aws:acm:us-east-1:123456789012:certificate/abc"
    merged = template.merge(packaged, dataclasses.replace(SETTINGS, ams_domain="ams.example.org",
                                                          ams_certificate_arn=cert))
    domain = merged["Resources"][AMS_DOMAIN_ID]  # a domain name serves REST and HTTP APIs alike
    assert domain["Type"] == "AWS::ApiGateway::DomainName" and domain["Properties"]["DomainName"] == "ams.example.org"
    mapping = merged["Resources"][http_api.AMS_MAPPING_ID]
    assert mapping["Type"] == "AWS::ApiGatewayV2::ApiMapping" and mapping["DependsOn"] == ["AmsHttpApiStage"]
    assert mapping["Properties"] == {"DomainName": {"Ref": AMS_DOMAIN_ID}, "ApiId": {"Ref": http_api.AMS_API_ID},
                                     "Stage": "$default"}  # no ApiMappingKey: paths from / as the library sends them
    assert merged["Outputs"]["AmsDomainURL"]["Value"] == "https://ams.example.org/"
    path = tmp_path / "app.json"
    path.write_text(json.dumps(merged))
    done = cfn_lint(path)
    assert done.returncode == 0, done.stdout + done.stderr


def sam_translated(merged: dict[str, Any]) -> dict[str, Any]:
    """The template as CloudFormation's SAM transform expands it (aws-sam-translator, in .venv-checkov with the
    policy check, infra/policy_check.py)."""
    python = ROOT / ".venv-checkov" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{python} is missing: `make test` installs it")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(merged, f)
        f.flush()
        done = subprocess.run([str(python), "-c", "import json, sys; from infra.policy_check import transformed; "
                               "print(json.dumps(transformed(json.load(open(sys.argv[1])))))", f.name],
                              cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout))
