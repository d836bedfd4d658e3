"""The opt-in gRPC edge stack ``metro-<stage>-grpc``: the container of infra/grpc/Dockerfile (``python -m
chalicelib.container``) on ECS Fargate behind an Application Load Balancer.

API Gateway and Lambda carry no bidirectional stream, so StreamingPull needs a long-running process. Pure (no AWS
calls): :func:`build` returns the template that ``python -m infra.deploy deploy --grpc`` hands to CloudFormation
after the app stack:

* an ECS cluster, a Fargate service (arm64, 0.25 vCPU / 0.5 GB by default) of the image, rolling deployments with
  the circuit breaker, and a log group with retention;
* the task's environment: the API function's, as the deploy gives it (``.chalice/config.json``'s variables and the
  stage's names, :func:`task_environment`), so that the task reads the stage's configuration and its secrets from
  SSM exactly as the functions do; plus the edge's port and grace period;
* the task role: the API function's grants (infra/policies.grpc_edge_statements, a subset of them) on the stage's
  tables, bucket, queues, secrets and functions; the execution role: the log group's writes and, for an image in
  ECR, pulls from its repository;
* an internet-facing ALB with an HTTPS listener (the certificate is a parameter) forwarding to a gRPC target group
  (``ProtocolVersion: GRPC``, health check ``/grpc.health.v1.Health/Check`` answering status 0), an idle timeout of
  4,000 s (ALB's maximum: an idle StreamingPull carries nothing for as long as no message comes);
* security groups: the listener's port from ``IngressCidr``, the task's port from the load balancer only, and from
  the task HTTPS out only (the AWS APIs and the image registry);
* target tracking between 1 and ``max_tasks`` tasks on the load balancer's active connections per healthy task.

Parameters: ``CertificateArn`` (ACM, for the host name clients use), ``VpcId`` and ``SubnetIds`` (at least two
Availability Zones: the load balancer needs them; the tasks run there too, with a public IP unless
``assign_public_ip`` is off, for which the subnets need a NAT gateway or VPC endpoints).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import policies
from infra.names import StageNames, resolve

ROOT = Path(__file__).resolve().parents[1]
CHALICE_CONFIG = ROOT / ".chalice" / "config.json"
DOCKERFILE = ROOT / "infra" / "grpc" / "Dockerfile"
CONTAINER = "grpc-edge"
GRPC_PORT = 8085
LISTENER_PORT = 443
HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check"
IDLE_TIMEOUT_SECONDS = 4000  # the ALB's maximum
# Calls in progress at SIGTERM get the grace period; a StreamingPull's handler may then sit up to a long poll
# (METRO_PULL_WAIT_SECONDS, 10 s) before its thread ends. ECS sends SIGKILL after the container's stop timeout.
GRACE_SECONDS = 15
STOP_TIMEOUT_SECONDS = 30
# A stream that the target's deregistration leaves open would only be cut when the delay ends: keep it short.
DEREGISTRATION_DELAY_SECONDS = 30
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
IDS = {"cluster": "Cluster", "service": "Service", "task": "TaskDefinition", "logs": "LogGroup",
       "task_role": "TaskRole", "execution_role": "ExecutionRole", "lb": "LoadBalancer", "tg": "TargetGroup",
       "listener": "Listener", "lb_sg": "LoadBalancerSecurityGroup", "task_sg": "TaskSecurityGroup",
       "scaling_target": "ScalableTarget", "scaling_policy": "ScalingPolicy"}
_ECR_IMAGE = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
                        r"(?P<repository>[a-z0-9][a-z0-9._/-]*?)(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")

Template = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """The deploy's choices for the gRPC edge stack."""

    stage: str
    image: str  # the image of infra/grpc/Dockerfile, pushed to a registry the tasks can reach (ECR, say)
    cpu: int = 256  # CPU units: 256 = 0.25 vCPU
    memory: int = 512  # MiB
    min_tasks: int = 1
    max_tasks: int = 4
    # The autoscaling target: the load balancer's active connections (clients' and its own to the tasks) per
    # healthy task. Each task's thread pool bounds its calls in progress (docs/deploy.md, "The gRPC edge").
    connections_per_task: int = 100
    workers: int = 256  # METRO_GRPC_WORKERS
    log_retention_days: int = 30
    ingress_cidr: str = "0.0.0.0/0"
    assign_public_ip: bool = True


def _sub(value: str) -> Any:
    return {"Fn::Sub": value} if "${AWS::" in value else value


def chalice_environment(stage: str, config_file: Path = CHALICE_CONFIG) -> dict[str, str]:
    """The variables ``chalice package`` gives the stage's functions: the global ones, then the stage's."""
    doc = json.loads(config_file.read_text())
    return {**doc.get("environment_variables", {}),
            **doc.get("stages", {}).get(stage, {}).get("environment_variables", {})}


def task_environment(stage: str, config_file: Path = CHALICE_CONFIG) -> dict[str, Any]:
    """The API function's environment as the deploy gives it (infra/template.py: Chalice's variables, then the
    stage's names, ``Fn::Sub`` on those naming the account and region); the task reads its configuration and
    secrets from it exactly as the function does."""
    env = {**chalice_environment(stage, config_file), **StageNames(stage).environment()}
    return {key: _sub(value) for key, value in env.items()}


def container_environment(settings: Settings, config_file: Path = CHALICE_CONFIG) -> dict[str, Any]:
    """Everything the task's container gets: the API function's environment, the region (which Lambda sets for a
    function), and the edge's own settings (chalicelib/config.GrpcEdgeConfig)."""
    return {**task_environment(settings.stage, config_file), "AWS_REGION": {"Ref": "AWS::Region"},
            "METRO_GRPC_PORT": str(GRPC_PORT), "METRO_GRPC_WORKERS": str(settings.workers),
            "METRO_GRPC_GRACE_SECONDS": str(GRACE_SECONDS)}


def resolved(environment: dict[str, Any], account: str, region: str) -> dict[str, str]:
    """An environment of the template with CloudFormation's values filled in (what the task would see)."""
    def value(v: Any) -> str:
        if isinstance(v, dict) and "Fn::Sub" in v:
            return resolve(v["Fn::Sub"], account, region)
        if v == {"Ref": "AWS::Region"}:
            return region
        if isinstance(v, str):
            return v
        raise ValueError(f"cannot resolve {v!r}")
    return {k: value(v) for k, v in environment.items()}


def ecr_repository_arn(image: str) -> Any:
    """The ECR repository an image is pulled from (an ``Fn::Sub`` ARN), or None for another registry."""
    found = _ECR_IMAGE.match(image)
    if not found:
        return None
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:ecr:{found['region']}:{found['account']}:repository/"
                       f"{found['repository']}"}


def _assume(service: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}}]}


def _role(name: str, statements: list[dict[str, Any]], description: str) -> dict[str, Any]:
    return {"Type": "AWS::IAM::Role", "Properties": {
        "Description": description,
        "AssumeRolePolicyDocument": _assume("ecs-tasks.amazonaws.com"),
        "Policies": [{"PolicyName": name, "PolicyDocument": {"Version": "2012-10-17", "Statement": statements}}]}}


def task_policy(stage: str) -> dict[str, Any]:
    """The task role's policy document."""
    return {"Version": "2012-10-17", "Statement": policies.grpc_edge_statements(StageNames(stage))}


def _execution_statements(settings: Settings) -> list[dict[str, Any]]:
    logs = [{"Sid": "Logs", "Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
             "Resource": [{"Fn::GetAtt": [IDS["logs"], "Arn"]}]}]
    repository = ecr_repository_arn(settings.image)
    if repository is None:
        return logs
    return [
        *logs,
        # GetAuthorizationToken has no resource type: it can only be granted on "*"
        {"Sid": "RegistryLogin", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": ["*"]},
        {"Sid": "ImagePull", "Effect": "Allow", "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage",
                                                           "ecr:GetDownloadUrlForLayer"], "Resource": [repository]},
    ]


def _task_definition(settings: Settings, names: StageNames) -> dict[str, Any]:
    environment = container_environment(settings)
    return {"Type": "AWS::ECS::TaskDefinition", "Properties": {
        "Family": names.grpc_stack,
        "RequiresCompatibilities": ["FARGATE"],
        "NetworkMode": "awsvpc",
        "RuntimePlatform": {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
        "Cpu": str(settings.cpu),
        "Memory": str(settings.memory),
        "ExecutionRoleArn": {"Fn::GetAtt": [IDS["execution_role"], "Arn"]},
        "TaskRoleArn": {"Fn::GetAtt": [IDS["task_role"], "Arn"]},
        "ContainerDefinitions": [{
            "Name": CONTAINER,
            "Image": settings.image,
            "Essential": True,
            "PortMappings": [{"ContainerPort": GRPC_PORT, "Protocol": "tcp"}],
            "Environment": [{"Name": k, "Value": v} for k, v in sorted(environment.items())],
            "StopTimeout": STOP_TIMEOUT_SECONDS,
            "ReadonlyRootFilesystem": True,
            "LogConfiguration": {"LogDriver": "awslogs", "Options": {
                "awslogs-group": {"Ref": IDS["logs"]}, "awslogs-region": {"Ref": "AWS::Region"},
                "awslogs-stream-prefix": CONTAINER}},
        }],
    }}


def _network(settings: Settings, names: StageNames) -> dict[str, Any]:
    lb_sg, task_sg = IDS["lb_sg"], IDS["task_sg"]
    return {
        lb_sg: {"Type": "AWS::EC2::SecurityGroup", "Properties": {
            "GroupDescription": f"{names.grpc_stack} load balancer: HTTPS from clients",
            "VpcId": {"Ref": "VpcId"},
            "SecurityGroupIngress": [{"IpProtocol": "tcp", "FromPort": LISTENER_PORT, "ToPort": LISTENER_PORT,
                                      "CidrIp": settings.ingress_cidr, "Description": "gRPC over TLS"}]}},
        task_sg: {"Type": "AWS::EC2::SecurityGroup", "Properties": {
            "GroupDescription": f"{names.grpc_stack} tasks: gRPC from the load balancer, HTTPS out",
            "VpcId": {"Ref": "VpcId"},
            "SecurityGroupEgress": [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0",
                                     "Description": "AWS APIs and the image registry"}]}},
        # separate rules: each group names the other
        "LoadBalancerToTasks": {"Type": "AWS::EC2::SecurityGroupEgress", "Properties": {
            "GroupId": {"Fn::GetAtt": [lb_sg, "GroupId"]}, "IpProtocol": "tcp", "FromPort": GRPC_PORT,
            "ToPort": GRPC_PORT, "DestinationSecurityGroupId": {"Fn::GetAtt": [task_sg, "GroupId"]},
            "Description": "gRPC (h2c) and health checks to the tasks"}},
        "TasksFromLoadBalancer": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": {
            "GroupId": {"Fn::GetAtt": [task_sg, "GroupId"]}, "IpProtocol": "tcp", "FromPort": GRPC_PORT,
            "ToPort": GRPC_PORT, "SourceSecurityGroupId": {"Fn::GetAtt": [lb_sg, "GroupId"]},
            "Description": "gRPC (h2c) and health checks from the load balancer"}},
    }


def _load_balancer() -> dict[str, Any]:
    """Named by CloudFormation (a change that replaces a named one would fail); the stack's outputs name them."""
    return {
        IDS["lb"]: {"Type": "AWS::ElasticLoadBalancingV2::LoadBalancer", "Properties": {
            "Type": "application", "Scheme": "internet-facing",
            "Subnets": {"Ref": "SubnetIds"}, "SecurityGroups": [{"Fn::GetAtt": [IDS["lb_sg"], "GroupId"]}],
            "LoadBalancerAttributes": [
                {"Key": "idle_timeout.timeout_seconds", "Value": str(IDLE_TIMEOUT_SECONDS)},
                {"Key": "routing.http.drop_invalid_header_fields.enabled", "Value": "true"}]}},
        IDS["tg"]: {"Type": "AWS::ElasticLoadBalancingV2::TargetGroup", "Properties": {
            "TargetType": "ip", "VpcId": {"Ref": "VpcId"},
            "Protocol": "HTTP", "ProtocolVersion": "GRPC", "Port": GRPC_PORT,
            "HealthCheckEnabled": True, "HealthCheckProtocol": "HTTP", "HealthCheckPath": HEALTH_CHECK_PATH,
            "Matcher": {"GrpcCode": "0"}, "HealthCheckIntervalSeconds": 15, "HealthCheckTimeoutSeconds": 5,
            "HealthyThresholdCount": 2, "UnhealthyThresholdCount": 3,
            "TargetGroupAttributes": [{"Key": "deregistration_delay.timeout_seconds",
                                       "Value": str(DEREGISTRATION_DELAY_SECONDS)}]}},
        IDS["listener"]: {"Type": "AWS::ElasticLoadBalancingV2::Listener", "Properties": {
            "LoadBalancerArn": {"Ref": IDS["lb"]}, "Port": LISTENER_PORT, "Protocol": "HTTPS",
            "SslPolicy": TLS_POLICY, "Certificates": [{"CertificateArn": {"Ref": "CertificateArn"}}],
            "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": IDS["tg"]}}]}},
    }


def _service(settings: Settings, names: StageNames) -> dict[str, Any]:
    return {"Type": "AWS::ECS::Service", "DependsOn": [IDS["listener"]], "Properties": {
        "ServiceName": names.grpc_stack,
        "Cluster": {"Ref": IDS["cluster"]},
        "TaskDefinition": {"Ref": IDS["task"]},
        "LaunchType": "FARGATE",
        # no DesiredCount: a new service starts with one task, and an update keeps what autoscaling set
        "DeploymentConfiguration": {"MinimumHealthyPercent": 100, "MaximumPercent": 200,
                                    "DeploymentCircuitBreaker": {"Enable": True, "Rollback": True}},
        "HealthCheckGracePeriodSeconds": 60,
        "NetworkConfiguration": {"AwsvpcConfiguration": {
            "Subnets": {"Ref": "SubnetIds"}, "SecurityGroups": [{"Fn::GetAtt": [IDS["task_sg"], "GroupId"]}],
            "AssignPublicIp": "ENABLED" if settings.assign_public_ip else "DISABLED"}},
        "LoadBalancers": [{"ContainerName": CONTAINER, "ContainerPort": GRPC_PORT,
                           "TargetGroupArn": {"Ref": IDS["tg"]}}],
        "EnableECSManagedTags": True,
        "PropagateTags": "SERVICE",
    }}


def _metric(name: str, dimensions: dict[str, Any], stat: str, metric_id: str) -> dict[str, Any]:
    return {"Id": metric_id, "ReturnData": False, "MetricStat": {"Stat": stat, "Metric": {
        "Namespace": "AWS/ApplicationELB", "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()]}}}


def _autoscaling(settings: Settings) -> dict[str, Any]:
    lb = {"Fn::GetAtt": [IDS["lb"], "LoadBalancerFullName"]}
    tg = {"Fn::GetAtt": [IDS["tg"], "TargetGroupFullName"]}
    return {
        IDS["scaling_target"]: {"Type": "AWS::ApplicationAutoScaling::ScalableTarget", "Properties": {
            "ServiceNamespace": "ecs", "ScalableDimension": "ecs:service:DesiredCount",
            "ResourceId": {"Fn::Join": ["/", ["service", {"Ref": IDS["cluster"]},
                                              {"Fn::GetAtt": [IDS["service"], "Name"]}]]},
            "MinCapacity": settings.min_tasks, "MaxCapacity": settings.max_tasks}},
        IDS["scaling_policy"]: {"Type": "AWS::ApplicationAutoScaling::ScalingPolicy", "Properties": {
            "PolicyName": "active-connections-per-task", "PolicyType": "TargetTrackingScaling",
            "ScalingTargetId": {"Ref": IDS["scaling_target"]},
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": settings.connections_per_task, "ScaleOutCooldown": 60, "ScaleInCooldown": 300,
                "CustomizedMetricSpecification": {"Metrics": [
                    _metric("ActiveConnectionCount", {"LoadBalancer": lb}, "Sum", "connections"),
                    _metric("HealthyHostCount", {"TargetGroup": tg, "LoadBalancer": lb}, "Average", "tasks"),
                    {"Id": "per_task", "Label": "active connections per healthy task", "ReturnData": True,
                     "Expression": "IF(tasks > 0, connections / tasks, connections)"},
                ]}}}},
    }


PARAMETERS: dict[str, Any] = {
    "CertificateArn": {"Type": "String", "AllowedPattern": r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/.+$",
                       "Description": "ACM certificate of the host name clients use (HTTPS listener)"},
    "VpcId": {"Type": "AWS::EC2::VPC::Id", "Description": "the VPC of the load balancer and the tasks"},
    "SubnetIds": {"Type": "List<AWS::EC2::Subnet::Id>",
                  "Description": "subnets in at least two Availability Zones, for the load balancer and the tasks"},
}


def build(settings: Settings) -> Template:
    """The gRPC edge stack's template."""
    names = StageNames(settings.stage)
    resources: dict[str, Any] = {
        IDS["logs"]: {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete",
                      "Properties": {"LogGroupName": f"/metro/{settings.stage}/grpc-edge",
                                     "RetentionInDays": settings.log_retention_days}},
        IDS["task_role"]: _role("metro-grpc-edge", task_policy(settings.stage)["Statement"],
                                f"{names.grpc_stack} task: the API function's grants on the stage's resources"),
        IDS["execution_role"]: _role("metro-grpc-edge-execution", _execution_statements(settings),
                                     f"{names.grpc_stack} task execution: image pull and log writes"),
        IDS["cluster"]: {"Type": "AWS::ECS::Cluster", "Properties": {
            "ClusterName": names.grpc_stack,
            "ClusterSettings": [{"Name": "containerInsights", "Value": "disabled"}]}},
        IDS["task"]: _task_definition(settings, names),
        IDS["service"]: _service(settings, names),
        **_network(settings, names),
        **_load_balancer(),
        **_autoscaling(settings),
    }
    lb_dns = {"Fn::GetAtt": [IDS["lb"], "DNSName"]}
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"Metro gRPC edge, stage {settings.stage} (infra/grpc_stack.py; opt-in: deploy --grpc)",
        "Parameters": PARAMETERS,
        "Resources": resources,
        "Outputs": {
            "LoadBalancerDNSName": {"Value": lb_dns,
                                    "Description": "point the certificate's host name here (CNAME or alias)"},
            "LoadBalancerHostedZoneId": {"Value": {"Fn::GetAtt": [IDS["lb"], "CanonicalHostedZoneID"]}},
            "ClusterName": {"Value": {"Ref": IDS["cluster"]}},
            "ServiceName": {"Value": {"Fn::GetAtt": [IDS["service"], "Name"]}},
            "LogGroupName": {"Value": {"Ref": IDS["logs"]}},
        },
    }
