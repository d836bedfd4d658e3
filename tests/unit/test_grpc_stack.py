"""The opt-in gRPC edge stack (infra/grpc_stack.py) and how the deploy runs it (infra/deploy.py): the load balancer
and its gRPC target group, the Fargate task and its environment, autoscaling, and least privilege: the task role
grants nothing the API function's role does not (cfn-lint on the template: tests/package/test_app_template.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from infra import concurrency, deploy, grpc_stack, policies
from infra.names import StageNames
from tests.unit.test_iam_policies import as_list, assert_scoped

ECR_IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/metro/grpc-edge:2026-11-26"
SETTINGS = grpc_stack.Settings("dev", ECR_IMAGE, max_tasks=6, connections_per_task=80)


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    return grpc_stack.build(SETTINGS)


def props(built: dict[str, Any], key: str) -> dict[str, Any]:
    return dict(built["Resources"][grpc_stack.IDS[key]]["Properties"])


def test_the_target_group_speaks_grpc_and_checks_the_standard_health_service(built: dict[str, Any]) -> None:
    tg = props(built, "tg")
    assert (tg["Protocol"], tg["ProtocolVersion"], tg["Port"], tg["TargetType"]) == ("HTTP", "GRPC", 8085, "ip")
    assert tg["HealthCheckPath"] == "/grpc.health.v1.Health/Check" and tg["Matcher"] == {"GrpcCode": "0"}
    attributes = {a["Key"]: a["Value"] for a in tg["TargetGroupAttributes"]}
    assert attributes["deregistration_delay.timeout_seconds"] == "30"


def test_the_listener_is_https_with_the_certificate_given(built: dict[str, Any]) -> None:
    listener = props(built, "listener")
    assert listener["Protocol"] == "HTTPS" and listener["Port"] == 443
    assert listener["Certificates"] == [{"CertificateArn": {"Ref": "CertificateArn"}}]
    assert listener["DefaultActions"] == [{"Type": "forward", "TargetGroupArn": {"Ref": "TargetGroup"}}]
    assert set(built["Parameters"]) == {"CertificateArn", "VpcId", "SubnetIds"}


def test_the_load_balancer_keeps_idle_streams_open(built: dict[str, Any]) -> None:
    lb = props(built, "lb")
    attributes = {a["Key"]: a["Value"] for a in lb["LoadBalancerAttributes"]}
    assert attributes["idle_timeout.timeout_seconds"] == "4000"  # the ALB's maximum
    assert lb["Scheme"] == "internet-facing" and lb["Subnets"] == {"Ref": "SubnetIds"}


def test_the_task_is_a_small_arm64_fargate_task_of_the_image(built: dict[str, Any]) -> None:
    task = props(built, "task")
    assert task["RequiresCompatibilities"] == ["FARGATE"] and task["NetworkMode"] == "awsvpc"
    assert task["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    assert (task["Cpu"], task["Memory"]) == ("256", "512")  # 0.25 vCPU, 0.5 GB by default
    [container] = task["ContainerDefinitions"]
    assert container["Image"] == ECR_IMAGE and container["PortMappings"] == [{"ContainerPort": 8085, "Protocol": "tcp"}]
    assert container["StopTimeout"] > grpc_stack.GRACE_SECONDS and container["ReadonlyRootFilesystem"] is True
    assert container["LogConfiguration"]["Options"]["awslogs-group"] == {"Ref": "LogGroup"}
    assert props(built, "logs")["RetentionInDays"] == 30
    service = props(built, "service")
    assert service["LaunchType"] == "FARGATE" and "DesiredCount" not in service  # autoscaling owns the count
    assert service["DeploymentConfiguration"]["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}
    assert service["LoadBalancers"] == [{"ContainerName": grpc_stack.CONTAINER, "ContainerPort": 8085,
                                         "TargetGroupArn": {"Ref": "TargetGroup"}}]


def test_the_task_gets_the_api_functions_environment(built: dict[str, Any]) -> None:
    """Its configuration and secrets are read as the API function reads them (the package test compares with the
    merged app template's own)."""
    [container] = props(built, "task")["ContainerDefinitions"]
    env = {e["Name"]: e["Value"] for e in container["Environment"]}
    names = StageNames("dev")
    assert env["METRO_MODE"] == "aws" and "METRO_AUTH" not in env  # keys mode, as deployed
    assert env["METRO_SECRETS_SSM_PATH"] == "/metro-dev" and env["METRO_BUCKET"] == {"Fn::Sub": names.bucket}
    assert {k: v for k, v in env.items() if k in names.environment() and k != "METRO_BUCKET"} == {
        k: v for k, v in names.environment().items() if k != "METRO_BUCKET"}
    assert env["AWS_REGION"] == {"Ref": "AWS::Region"}
    assert (env["METRO_GRPC_PORT"], env["METRO_GRPC_WORKERS"], env["METRO_GRPC_GRACE_SECONDS"]) == ("8085", "256", "15")
    assert not [k for k in env if k in ("METRO_ACK_SECRET", "METRO_ADMIN_KEY", "METRO_PUSH_SIGNING_KEY")]


def test_the_environment_resolves_as_cloudformation_would() -> None:
    env = grpc_stack.resolved(grpc_stack.container_environment(SETTINGS), "000000000000", "us-east-1")
    assert env["METRO_BUCKET"] == "metro-dev-000000000000-us-east-1" and env["AWS_REGION"] == "us-east-1"
    assert all(isinstance(v, str) for v in env.values())


def test_autoscaling_tracks_active_connections_per_healthy_task(built: dict[str, Any]) -> None:
    target = props(built, "scaling_target")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 6)
    assert target["ScalableDimension"] == "ecs:service:DesiredCount"
    tracking = props(built, "scaling_policy")["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["TargetValue"] == 80
    metrics = {m["Id"]: m for m in tracking["CustomizedMetricSpecification"]["Metrics"]}
    assert metrics["connections"]["MetricStat"]["Metric"]["MetricName"] == "ActiveConnectionCount"
    assert metrics["tasks"]["MetricStat"]["Metric"]["MetricName"] == "HealthyHostCount"
    assert [m["Id"] for m in metrics.values() if m["ReturnData"]] == ["per_task"]


def test_tasks_take_grpc_from_the_load_balancer_only_and_send_https_only(built: dict[str, Any]) -> None:
    resources = built["Resources"]
    task_sg = resources["TaskSecurityGroup"]["Properties"]
    assert "SecurityGroupIngress" not in task_sg
    assert task_sg["SecurityGroupEgress"] == [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443,
                                               "CidrIp": "0.0.0.0/0", "Description": "AWS APIs and the image registry"}]
    ingress = resources["TasksFromLoadBalancer"]["Properties"]
    assert ingress["SourceSecurityGroupId"] == {"Fn::GetAtt": ["LoadBalancerSecurityGroup", "GroupId"]}
    assert (ingress["FromPort"], ingress["ToPort"]) == (8085, 8085)


# --- least privilege ------------------------------------------------------------------------------


def grants(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (action, resource, condition) a policy's statements allow, one by one."""
    out = set()
    for st in statements:
        assert st["Effect"] == "Allow" and "NotAction" not in st and "NotResource" not in st
        for action in as_list(st["Action"]):
            for resource in as_list(st["Resource"]):
                out.add((action, json.dumps(resource, sort_keys=True), json.dumps(st.get("Condition"), sort_keys=True)))
    return out


@pytest.mark.parametrize("stage", policies.STAGES)
def test_the_task_role_grants_nothing_the_api_role_does_not(stage: str) -> None:
    task = grants(grpc_stack.task_policy(stage)["Statement"])
    api = grants(policies.policy(stage, "api_handler")["Statement"])
    assert task <= api, sorted(task - api)
    assert_scoped(stage, grpc_stack.task_policy(stage))
    # what it leaves out: the function's own log group, its traces and :metrics' reads (CloudWatch, the metrics job's
    # summaries and the listing that makes a missing one a 404), which no gRPC method makes
    assert {a for a, _, _ in api - task} == {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTelemetryRecords",
                                             "xray:PutTraceSegments", "cloudwatch:GetMetricStatistics",
                                             "s3:GetObject", "s3:ListBucket"}
    assert {r for a, r, _ in api - task if a == "s3:GetObject"} == {json.dumps(
        {"Fn::Sub": f"arn:${{AWS::Partition}}:s3:::{StageNames(stage).bucket}/metrics/*"})}


def test_the_template_carries_that_policy_and_ecs_tasks_alone_assume_the_roles(built: dict[str, Any]) -> None:
    task_role = props(built, "task_role")
    assert task_role["Policies"][0]["PolicyDocument"] == grpc_stack.task_policy("dev")
    for key in ("task_role", "execution_role"):
        [trust] = props(built, key)["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "ecs-tasks.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
        assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


def test_the_execution_role_pulls_from_the_images_repository_and_writes_the_log_group(built: dict[str, Any]) -> None:
    statements = props(built, "execution_role")["Policies"][0]["PolicyDocument"]["Statement"]
    by_sid = {st["Sid"]: st for st in statements}
    assert by_sid["Logs"]["Resource"] == [{"Fn::GetAtt": ["LogGroup", "Arn"]}]
    assert by_sid["ImagePull"]["Resource"] == [
        {"Fn::Sub": "arn:${AWS::Partition}:ecr:eu-west-1:123456789012:repository/metro/grpc-edge"}]
    assert by_sid["RegistryLogin"] == {"Sid": "RegistryLogin", "Effect": "Allow",
                                       "Action": ["ecr:GetAuthorizationToken"], "Resource": ["*"]}
    elsewhere = grpc_stack.build(grpc_stack.Settings("dev", "ghcr.io/example/metro-grpc-edge:1"))
    statements = elsewhere["Resources"]["ExecutionRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert [st["Sid"] for st in statements] == ["Logs"]  # no ECR grant for an image elsewhere


@pytest.mark.parametrize(("image", "repository"), [
    ("123456789012.dkr.ecr.us-east-1.amazonaws.com/metro:latest", "us-east-1:123456789012:repository/metro"),
    ("123456789012.dkr.ecr.us-east-1.amazonaws.com/a/b-c@sha256:" + "0" * 64,
     "us-east-1:123456789012:repository/a/b-c"),
    ("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/m:1", "cn-north-1:123456789012:repository/m"),
    ("public.ecr.aws/x/metro:1", None),
    ("metro:latest", None),
])
def test_an_images_ecr_repository(image: str, repository: str | None) -> None:
    found = grpc_stack.ecr_repository_arn(image)
    assert (found and found["Fn::Sub"].removeprefix("arn:${AWS::Partition}:ecr:")) == repository


# --- the deploy -----------------------------------------------------------------------------------


class FakeEc2:
    def __init__(self, vpcs: list[str], subnets: list[dict[str, str]]) -> None:
        self.vpcs, self.subnets = vpcs, subnets

    def describe_vpcs(self, Filters: list[Any]) -> dict[str, Any]:
        return {"Vpcs": [{"VpcId": v} for v in self.vpcs]}

    def describe_subnets(self, **kwargs: Any) -> dict[str, Any]:
        if "SubnetIds" in kwargs:
            return {"Subnets": [s for s in self.subnets if s["SubnetId"] in kwargs["SubnetIds"]]}
        vpc = kwargs["Filters"][0]["Values"][0]
        return {"Subnets": [s for s in self.subnets if s["VpcId"] == vpc and s.get("default") == "true"]}


SUBNETS = [{"SubnetId": "subnet-b", "VpcId": "vpc-1", "AvailabilityZone": "us-east-1b", "default": "true"},
           {"SubnetId": "subnet-a", "VpcId": "vpc-1", "AvailabilityZone": "us-east-1a", "default": "true"},
           {"SubnetId": "subnet-x", "VpcId": "vpc-2", "AvailabilityZone": "us-east-1a"},
           {"SubnetId": "subnet-y", "VpcId": "vpc-2", "AvailabilityZone": "us-east-1a"}]


def test_the_edge_runs_in_the_default_vpcs_default_subnets_unless_told() -> None:
    assert deploy.grpc_network(FakeEc2(["vpc-1"], SUBNETS), "", ()) == ("vpc-1", ["subnet-a", "subnet-b"])
    given = deploy.grpc_network(FakeEc2([], SUBNETS), "", ("subnet-a", "subnet-b"))
    assert given == ("vpc-1", ["subnet-a", "subnet-b"])
    with pytest.raises(RuntimeError, match="default VPC"):
        deploy.grpc_network(FakeEc2([], SUBNETS), "", ())
    with pytest.raises(RuntimeError, match="two Availability Zones"):
        deploy.grpc_network(FakeEc2([], SUBNETS), "", ("subnet-x", "subnet-y"))
    with pytest.raises(RuntimeError, match="one VPC"):
        deploy.grpc_network(FakeEc2([], SUBNETS), "", ("subnet-a", "subnet-x"))
    with pytest.raises(RuntimeError, match="one VPC"):
        deploy.grpc_network(FakeEc2([], SUBNETS), "vpc-2", ("subnet-a", "subnet-b"))


def test_grpc_without_an_image_or_a_certificate_deploys_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy, "target", lambda stage, region: deploy.Target(StageNames(stage), "1" * 12, region))

    def deployed(*args: Any) -> Any:
        raise AssertionError("nothing may be deployed")

    monkeypatch.setattr(deploy, "deploy_stage", deployed)
    monkeypatch.setattr(deploy, "session_client", deployed)
    done = CliRunner().invoke(deploy.cli, ["deploy", "--stage", "dev", "--region", "us-east-1", "--grpc",
                                           "--grpc-image", ECR_IMAGE])
    assert done.exit_code == 2 and "--grpc-certificate-arn" in done.output


def test_the_grpc_stack_is_deployed_after_the_app_and_destroyed_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[str] = []
    monkeypatch.setattr(deploy, "target", lambda stage, region: deploy.Target(StageNames(stage), "1" * 12, region))
    monkeypatch.setattr(deploy, "grpc_network", lambda ec2, vpc, subnets: ("vpc-1", ["subnet-a", "subnet-b"]))
    monkeypatch.setattr(deploy, "session_client", lambda service, region: service)
    monkeypatch.setattr(deploy, "deploy_stage", lambda t, settings, workdir: (steps.append("app"), (True, "url"))[1])
    monkeypatch.setattr(deploy, "concurrency_plan", lambda t, push_cap: concurrency.Plan({"maintenance": 1}))

    def change_set(cfn: Any, stack: str, source: dict[str, str], parameters: dict[str, str]) -> bool:
        template = json.loads(source["TemplateBody"])
        steps.append(f"{stack} {template['Resources']['TaskDefinition']['Properties']['Cpu']}")
        assert parameters == {"CertificateArn": "arn:aws:acm:us-east-1:111111111111:certificate/c", "VpcId": "vpc-1",
                              "SubnetIds": "subnet-a,subnet-b"}
        return True

    monkeypatch.setattr(deploy, "apply_change_set", change_set)
    monkeypatch.setattr(deploy, "outputs", lambda cfn, stack: {"LoadBalancerDNSName": "lb.example"})
    done = CliRunner().invoke(deploy.cli, [
        "deploy", "--stage", "dev", "--region", "us-east-1", "--grpc", "--grpc-image", ECR_IMAGE,
        "--grpc-certificate-arn", "arn:aws:acm:us-east-1:111111111111:certificate/c", "--grpc-cpu", "512",
        "--grpc-memory", "1024"])
    assert done.exit_code == 0, done.output
    assert steps == ["app", "metro-dev-grpc 512"] and "gRPC edge: lb.example:443" in done.output

    deleted: list[str] = []
    monkeypatch.setattr(deploy, "remove_push_mappings", lambda lam, function: 0)
    monkeypatch.setattr(deploy, "stack_status", lambda cfn, stack: "CREATE_COMPLETE")

    class Cfn:
        def delete_stack(self, StackName: str) -> None:
            deleted.append(StackName)

        def get_waiter(self, name: str) -> Any:
            return type("Waiter", (), {"wait": lambda self, **kwargs: None})()

    monkeypatch.setattr(deploy, "session_client", lambda service, region: Cfn())
    done = CliRunner().invoke(deploy.cli, ["destroy", "--stage", "dev", "--region", "us-east-1"])
    assert done.exit_code == 0, done.output
    assert deleted == ["metro-dev-grpc", "metro-dev-app"]
