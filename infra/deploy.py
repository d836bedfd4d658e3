"""Deploy Metro to AWS (or an emulator at ``AWS_ENDPOINT_URL``) with boto3 only: no AWS CLI.

    python -m infra.deploy deploy  --stage dev [--parallelization-factor 4] [--alarm-email A | --alarm-topic-arn ARN]
                                   [--grpc --grpc-image IMAGE --grpc-certificate-arn ARN [--grpc-subnet-ids A,B]]
    python -m infra.deploy destroy --stage dev [--delete-data]

``deploy``: the storage stack (infra/resources.json: tables and bucket, kept on delete), then
``chalice package`` and the pyarrow layer (infra/layer.py) merged by infra/template.py (stream mapping
with partial batch failures, bisection, on-failure DLQ and alarm, parallelization, reserved
concurrency), bundle, layer and template uploaded under ``deploy/`` in the stage's bucket, then the
app stack. Both stacks go through change sets: a run with nothing to change
leaves them alone and exits 0. Prints the HTTPS endpoint.

Push subscriptions' queue mappings (made by Metro at run time, not by a stack) without partial batch
failure reports are repaired.

``--grpc`` (opt-in) then deploys the gRPC edge stack (infra/grpc_stack.py: the container of infra/grpc/Dockerfile
on ECS Fargate behind an ALB) with the image given, in the default VPC's default subnets unless subnets are given.

``destroy``: the gRPC edge stack if there is one, the app stack and the push mappings Metro made; tables, bucket
and queues stay unless ``--delete-data``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from infra import concurrency, grpc_stack, lambda_runtime, layer, secrets, template, v8_layer
from infra.names import StageNames, check_stage, resolve
from infra.stage_data import delete_stage_data, remove_push_mappings, repair_push_mappings

ROOT = Path(__file__).resolve().parents[1]
STORAGE_TEMPLATE = ROOT / "infra" / "resources.json"
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]
NO_CHANGE_REASONS = ("didn't contain changes", "No updates are to be performed")
WAIT = {"Delay": 5, "MaxAttempts": 360}

cli = typer.Typer(add_completion=False, help="Deploy or destroy one Metro stage on AWS with boto3.")


@dataclass(frozen=True)
class Target:
    """One stage in one account and region."""

    names: StageNames
    account: str
    region: str

    @property
    def bucket(self) -> str:
        return resolve(self.names.bucket, self.account, self.region)


def stage_auth(stage: str, config_file: Path = ROOT / ".chalice" / "config.json") -> str:
    """The stage's METRO_AUTH as .chalice/config.json sets it (keys when unset); a stage configured open is not
    deployed, since a deployed Metro refuses to start in open mode."""
    doc = json.loads(config_file.read_text())
    env = {**doc.get("environment_variables", {}), **doc.get("stages", {}).get(stage, {}).get(
        "environment_variables", {})}
    return str(env.get("METRO_AUTH", "keys")).strip().lower()


def session_client(service: str, region: str) -> Any:
    import boto3

    return boto3.session.Session().client(service, region_name=region)  # type: ignore[call-overload]


def target(stage: str, region: str) -> Target:
    account = str(session_client("sts", region).get_caller_identity()["Account"])
    return Target(StageNames(check_stage(stage)), account, region)


# --- CloudFormation ---------------------------------------------------------------------------


def stack_status(cfn: Any, stack: str) -> str:
    """The stack's status, "" when it does not exist."""
    try:
        stacks = cfn.describe_stacks(StackName=stack)["Stacks"]
    except Exception as exc:
        if "does not exist" in str(exc):
            return ""
        raise
    return str(stacks[0]["StackStatus"]) if stacks else ""


def _no_change(cfn: Any, stack: str, change_set: str) -> bool:
    desc = cfn.describe_change_set(StackName=stack, ChangeSetName=change_set)
    reason = str(desc.get("StatusReason", ""))
    if desc.get("Status") == "FAILED" and any(r in reason for r in NO_CHANGE_REASONS):
        cfn.delete_change_set(StackName=stack, ChangeSetName=change_set)
        return True
    return False


def apply_change_set(cfn: Any, stack: str, source: dict[str, str], parameters: dict[str, str]) -> bool:
    """Create or update ``stack`` through a change set; False (and nothing done) when nothing changes.

    ``source`` is ``{"TemplateBody": ...}`` or ``{"TemplateURL": ...}``. A stack whose creation failed
    (ROLLBACK_COMPLETE) cannot be updated: it is deleted and created again.
    """
    from botocore.exceptions import WaiterError

    status = stack_status(cfn, stack)
    if status == "ROLLBACK_COMPLETE":
        cfn.delete_stack(StackName=stack)
        cfn.get_waiter("stack_delete_complete").wait(StackName=stack, WaiterConfig=WAIT)
        status = ""
    kind = "UPDATE" if status and status != "REVIEW_IN_PROGRESS" else "CREATE"
    name = f"metro-{uuid.uuid4().hex[:12]}"
    try:
        cfn.create_change_set(
            StackName=stack, ChangeSetName=name, ChangeSetType=kind, Capabilities=CAPABILITIES,
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in sorted(parameters.items())], **source,
        )
    except Exception as exc:  # some emulators refuse an empty change set at once instead of failing it
        if any(r in str(exc) for r in NO_CHANGE_REASONS):
            return False
        raise
    try:
        cfn.get_waiter("change_set_create_complete").wait(StackName=stack, ChangeSetName=name, WaiterConfig=WAIT)
    except WaiterError:
        if _no_change(cfn, stack, name):
            return False
        raise
    cfn.execute_change_set(StackName=stack, ChangeSetName=name)
    done = "stack_create_complete" if kind == "CREATE" else "stack_update_complete"
    cfn.get_waiter(done).wait(StackName=stack, WaiterConfig=WAIT)
    return True


def outputs(cfn: Any, stack: str) -> dict[str, str]:
    found = cfn.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    return {o["OutputKey"]: o["OutputValue"] for o in found}


# --- the steps --------------------------------------------------------------------------------


def storage_parameters(t: Target) -> dict[str, str]:
    n = t.names
    return {"ResourcesTableName": n.resources_table, "MessagesTableName": n.messages_table,
            "LeasesTableName": n.leases_table, "BucketName": t.bucket}


def package(stage: str, region: str, out: Path) -> tuple[template.Template, Path]:
    """``chalice package`` of the stage for Lambda's runtime (infra/lambda_runtime.py): the SAM template and the
    bundle (reproducible bytes)."""
    done = lambda_runtime.chalice_package(stage, out, region)
    typer.echo(done.stdout, nl=False)
    if done.returncode != 0:
        raise RuntimeError(f"chalice package failed:\n{done.stderr[-3000:]}")
    return json.loads((out / "sam.json").read_text()), out / "deployment.zip"


def upload(s3: Any, bucket: str, data: bytes, stage: str, suffix: str) -> str:
    """PUT ``data`` under a content-addressed key (same bytes, same key: a re-run changes nothing)."""
    key = f"deploy/{stage}/app-{hashlib.sha256(data).hexdigest()[:24]}{suffix}"
    s3.put_object(Bucket=bucket, Key=key, Body=data)
    return key


def template_url(s3: Any, bucket: str, key: str, region: str) -> str:
    endpoint = s3.meta.endpoint_url.rstrip("/")
    if "amazonaws.com" in endpoint:
        return f"https://{bucket}.s3.{region}.amazonaws.com/{key}"
    return f"{endpoint}/{bucket}/{key}"  # an emulator: path-style


def reachable_endpoint(endpoint_url: str, service_endpoint: str) -> str:
    """The API's URL to call: CloudFormation's ``EndpointURL`` on AWS. On an emulator (``service_endpoint`` is not
    amazonaws.com) that host name does not resolve: the same API addressed by path, as LocalStack and ministack
    serve it: ``{emulator}/_aws/execute-api/{api id}/{stage}`` for a REST API's stage, and
    ``{emulator}/_aws/execute-api/{api id}`` for an HTTP API's ``$default`` stage, whose URL has no stage."""
    found = re.match(r"^https://([a-z0-9]+)\.execute-api\.[^/]+?(?:/([^/]*?))?/?$", endpoint_url)
    if "amazonaws.com" in service_endpoint or not found:
        return endpoint_url
    api_id, stage = found.groups()
    return f"{service_endpoint.rstrip('/')}/_aws/execute-api/{api_id}" + (f"/{stage}" if stage else "")


def deploy_stage(t: Target, settings: dict[str, Any], workdir: Path) -> tuple[bool, str]:
    """Both stacks; (anything changed, the HTTPS endpoint)."""
    cfn, s3 = session_client("cloudformation", t.region), session_client("s3", t.region)
    changed = apply_change_set(cfn, t.names.storage_stack, {"TemplateBody": STORAGE_TEMPLATE.read_text()},
                               storage_parameters(t))
    created = secrets.ensure(session_client("ssm", t.region), t.names.stage)
    if created:
        typer.echo(f"created the stage's secrets in SSM Parameter Store: {', '.join(created)}")
        changed = True
    packaged, bundle = package(t.names.stage, t.region, workdir)
    code_key = upload(s3, t.bucket, bundle.read_bytes(), t.names.stage, ".zip")
    pyarrow_zip = layer.build(layer.download(workdir / "layer"), workdir / "pyarrow-layer.zip")
    layer_key = upload(s3, t.bucket, pyarrow_zip.read_bytes(), t.names.stage, "-pyarrow-layer.zip")
    v8_zip = v8_layer.build(v8_layer.download(workdir / "v8-layer"), workdir / "javascript-layer.zip")
    v8_key = upload(s3, t.bucket, v8_zip.read_bytes(), t.names.stage, "-javascript-layer.zip")
    merged = template.merge(packaged, template.Settings(t.names.stage, t.bucket, code_key, layer_key=layer_key,
                                                        v8_layer_key=v8_key, **settings))
    body = json.dumps(merged, sort_keys=True).encode()
    body_key = upload(s3, t.bucket, body, t.names.stage, ".json")
    source = {"TemplateURL": template_url(s3, t.bucket, body_key, t.region)}
    changed = apply_change_set(cfn, t.names.app_stack, source, {}) or changed
    for mapped in ("push", "export"):  # both report partial batch failures (chalicelib/store/mappings.py)
        if repair_push_mappings(session_client("lambda", t.region), t.names.function(mapped)):
            changed = True
    found = outputs(cfn, t.names.app_stack)
    if found.get("AmsDomainTarget"):
        typer.echo(f"AMS dialect: {found['AmsDomainURL']} once its DNS name points at {found['AmsDomainTarget']}")
    return changed, reachable_endpoint(found.get("EndpointURL", ""), cfn.meta.endpoint_url)


@dataclass(frozen=True)
class GrpcEdge:
    """The gRPC edge stack to deploy: its settings, certificate and network."""

    settings: grpc_stack.Settings
    certificate_arn: str
    vpc_id: str
    subnet_ids: tuple[str, ...]


def grpc_network(ec2: Any, vpc_id: str, subnet_ids: tuple[str, ...]) -> tuple[str, list[str]]:
    """The VPC and subnets of the gRPC edge: those given, or the default VPC's default subnets (one per Availability
    Zone); the load balancer needs subnets in two zones at least."""
    if not subnet_ids:
        if not vpc_id:
            vpcs = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
            if not vpcs:
                raise RuntimeError("the region has no default VPC: give --grpc-vpc-id and --grpc-subnet-ids")
            vpc_id = str(vpcs[0]["VpcId"])
        found = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]},
                                              {"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
    else:
        found = ec2.describe_subnets(SubnetIds=list(subnet_ids))["Subnets"]
    vpcs_of_subnets = {str(s["VpcId"]) for s in found}
    if len(vpcs_of_subnets) != 1 or (vpc_id and vpc_id not in vpcs_of_subnets):
        raise RuntimeError(f"the gRPC edge's subnets must all be in one VPC{f' ({vpc_id})' if vpc_id else ''}")
    if len({s["AvailabilityZone"] for s in found}) < 2:
        raise RuntimeError("the gRPC edge's load balancer needs subnets in two Availability Zones at least "
                           "(--grpc-subnet-ids)")
    return vpcs_of_subnets.pop(), sorted(str(s["SubnetId"]) for s in found)


def checked_grpc_edge(t: Target, settings: grpc_stack.Settings, certificate_arn: str, vpc_id: str,
                      subnet_ids: str) -> GrpcEdge:
    """What ``deploy --grpc`` was given, checked before anything is deployed (exit 2 with what is missing)."""
    if not (settings.image and certificate_arn):
        typer.echo("--grpc needs --grpc-image (infra/grpc/Dockerfile, built for arm64 and pushed) and "
                   "--grpc-certificate-arn (an ACM certificate of the host name clients will use)", err=True)
        raise typer.Exit(2)
    try:
        vpc, subnets = grpc_network(session_client("ec2", t.region), vpc_id,
                                    tuple(s.strip() for s in subnet_ids.split(",") if s.strip()))
    except RuntimeError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    return GrpcEdge(settings, certificate_arn, vpc, tuple(subnets))


def deploy_grpc(t: Target, edge: GrpcEdge) -> tuple[bool, str]:
    """The gRPC edge stack, after the app stack; (anything changed, the load balancer's DNS name)."""
    cfn = session_client("cloudformation", t.region)
    body = json.dumps(grpc_stack.build(edge.settings), sort_keys=True)
    parameters = {"CertificateArn": edge.certificate_arn, "VpcId": edge.vpc_id, "SubnetIds": ",".join(edge.subnet_ids)}
    changed = apply_change_set(cfn, t.names.grpc_stack, {"TemplateBody": body}, parameters)
    return changed, outputs(cfn, t.names.grpc_stack).get("LoadBalancerDNSName", "")


# --- the commands -----------------------------------------------------------------------------


def _region(region: str) -> str:
    """--region, else AWS_REGION, else the boto3 session's (AWS_DEFAULT_REGION, the profile's configuration)."""
    import boto3

    found = region or os.environ.get("AWS_REGION") or boto3.session.Session().region_name
    if not found:
        typer.echo("no region: pass --region, set AWS_REGION, or configure the profile's region", err=True)
        raise typer.Exit(2)
    return str(found)


def concurrency_plan(t: Target, push_cap: int) -> concurrency.Plan:
    """The stage's reserved concurrency for this account (infra/concurrency.py), its notes printed."""
    lam = session_client("lambda", t.region)
    limits = lam.get_account_settings()["AccountLimit"]
    current = {}
    for function in ("maintenance", "push"):
        with contextlib.suppress(lam.exceptions.ResourceNotFoundException):
            reserved = lam.get_function_concurrency(FunctionName=t.names.function(function))
            current[function] = int(reserved.get("ReservedConcurrentExecutions", 0))
    found = concurrency.plan(concurrency.Account(int(limits["ConcurrentExecutions"]),
                                                 int(limits["UnreservedConcurrentExecutions"])), current, push_cap)
    for note in found.notes:
        typer.echo(f"note: {note}", err=True)
    return found


@cli.command()
def deploy(
    stage: str = typer.Option(..., help="the stage: dev, prod, ... (names: infra/names.py)"),
    region: str = typer.Option("", help="default: AWS_REGION / AWS_DEFAULT_REGION"),
    parallelization_factor: int = typer.Option(4, min=1, max=10, help="concurrent fan-out batches per shard"),
    maximum_retry_attempts: int = typer.Option(100, min=0, max=10000, help="retries of a failing fan-out batch"),
    alarm_topic_arn: str = typer.Option("", help="an existing SNS topic for the alarms (default: the stack's own)"),
    alarm_email: str = typer.Option("", help="an e-mail address subscribed to the stack's alarm topic"),
    push_concurrency: int = typer.Option(100, min=2, help="cap on push deliveries at once, all subscriptions"),
    ams_domain: str = typer.Option("", help="host name of the AMS dialect (argo-ams-library needs one)"),
    ams_certificate_arn: str = typer.Option("", help="--ams-domain: its ACM certificate, in the stage's region"),
    front_door: str = typer.Option("http", help="http: API Gateway HTTP APIs ($1.00 per million requests); rest: "
                                                "REST APIs ($3.50; WAF, X-Ray, usage plans); "
                                                "docs/decisions/front-door.md"),
    grpc: bool = typer.Option(False, "--grpc", help="also deploy the gRPC edge stack (ECS Fargate behind an ALB)"),
    fis_extension: bool = typer.Option(False, "--fis-extension", help="the AWS FIS extension on the functions FIS "
                                       "experiments target (docs/fault-injection.md)"),
    grpc_image: str = typer.Option("", help="--grpc: the image of infra/grpc/Dockerfile (arm64), e.g. in ECR"),
    grpc_certificate_arn: str = typer.Option("", help="--grpc: the ACM certificate of the host name clients use"),
    grpc_vpc_id: str = typer.Option("", help="--grpc: the VPC (default: the default VPC, or the subnets')"),
    grpc_subnet_ids: str = typer.Option("", help="--grpc: comma-separated subnets in two zones at least "
                                                 "(default: the VPC's default subnets)"),
    grpc_cpu: int = typer.Option(256, help="--grpc: CPU units per task (256 = 0.25 vCPU)"),
    grpc_memory: int = typer.Option(512, help="--grpc: MiB per task"),
    grpc_max_tasks: int = typer.Option(4, min=1, help="--grpc: autoscaling's upper bound"),
    grpc_connections_per_task: int = typer.Option(100, min=1, help="--grpc: autoscaling's target, the load "
                                                                    "balancer's active connections per task"),
) -> None:
    """Create or update the stage; exit 0 with "no changes" when everything is already deployed."""
    if stage_auth(stage) == "open":  # the deployed functions would refuse to start (runtime.check_secrets)
        typer.echo(f"stage {stage} is configured with METRO_AUTH=open, which a deployed Metro refuses (every caller "
                   "would be the service admin of every project): remove it, keys mode is the default", err=True)
        raise typer.Exit(1)
    if front_door not in template.FRONT_DOORS:
        typer.echo(f"--front-door is one of {', '.join(template.FRONT_DOORS)}, not {front_door!r}", err=True)
        raise typer.Exit(2)
    if bool(ams_domain) != bool(ams_certificate_arn):
        typer.echo("--ams-domain and --ams-certificate-arn go together", err=True)
        raise typer.Exit(2)
    t = target(stage, _region(region))
    edge = checked_grpc_edge(t, grpc_stack.Settings(stage, grpc_image, cpu=grpc_cpu, memory=grpc_memory,
                                                    max_tasks=grpc_max_tasks,
                                                    connections_per_task=grpc_connections_per_task),
                             grpc_certificate_arn, grpc_vpc_id, grpc_subnet_ids) if grpc else None
    settings = {"parallelization_factor": parallelization_factor,
                "maximum_retry_attempts": maximum_retry_attempts, "alarm_topic_arn": alarm_topic_arn,
                "alarm_email": alarm_email,
                "reserved_concurrency": concurrency_plan(t, push_concurrency).reservations,
                "ams_domain": ams_domain, "ams_certificate_arn": ams_certificate_arn, "front_door": front_door,
                "fis_extension": fis_extension}
    with tempfile.TemporaryDirectory(prefix="metro-package-") as workdir:
        changed, endpoint = deploy_stage(t, settings, Path(workdir))
    grpc_line = ""
    if edge is not None:
        grpc_changed, grpc_endpoint = deploy_grpc(t, edge)
        changed = grpc_changed or changed
        grpc_line = f"gRPC edge: {grpc_endpoint}:443 (point the certificate's host name at it)"
    elif stack_status(session_client("cloudformation", t.region), t.names.grpc_stack):
        grpc_line = f"gRPC edge: stack {t.names.grpc_stack} left as it is (--grpc updates it, destroy removes it)"
    typer.echo(f"{'deployed' if changed else 'no changes'}: stage {stage} in {t.account}/{t.region}")
    typer.echo(f"endpoint: {endpoint}")
    if grpc_line:
        typer.echo(grpc_line)
    typer.echo(f"admin token: {secrets.admin_key_hint(stage, t.region)}")


@cli.command()
def destroy(
    stage: str = typer.Option(...),
    region: str = typer.Option(""),
    delete_data: bool = typer.Option(False, "--delete-data", help="also delete tables, bucket and queues"),
) -> None:
    """Delete the gRPC edge and app stacks (and Metro's push mappings); the data stays unless --delete-data."""
    t = target(stage, _region(region))
    cfn = session_client("cloudformation", t.region)
    lam = session_client("lambda", t.region)
    removed = remove_push_mappings(lam, t.names.function("push"))
    removed += remove_push_mappings(lam, t.names.function("ingest"))  # import topics' Kinesis mappings
    removed += remove_push_mappings(lam, t.names.function("export"))  # export subscriptions' queue mappings
    stacks = [t.names.grpc_stack, t.names.app_stack] + ([t.names.storage_stack] if delete_data else [])
    deleted = [stack for stack in stacks if stack_status(cfn, stack)]
    for stack in deleted:  # the gRPC edge first: its tasks use the app's resources
        cfn.delete_stack(StackName=stack)
        cfn.get_waiter("stack_delete_complete").wait(StackName=stack, WaiterConfig=WAIT)
    if delete_data:
        delete_stage_data(t.names, t.bucket, *(session_client(s, t.region) for s in ("dynamodb", "s3", "sqs")))
    typer.echo(f"deleted {', '.join(deleted) or 'no stack'} and {removed} push mappings"
               + ("" if delete_data else f"; kept tables {', '.join(t.names.tables)} and bucket {t.bucket}"))


if __name__ == "__main__":
    cli()
