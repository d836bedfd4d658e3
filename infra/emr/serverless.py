"""The nightly Spark jobs on EMR Serverless (arm64): the default way to run spark_emr/ in AWS.

    python -m infra.emr.serverless template --stage dev            # print the CloudFormation template (JSON)
    python -m infra.emr.serverless deploy   --stage dev [--venv dist/emr/venv.tar.gz | --interpreter PATH]
                                            [--alarm-topic-arn ARN] [--paused]
    python -m infra.emr.serverless run      --stage dev --job compact [-- --min-age-seconds 0 ...]
    python -m infra.emr.serverless destroy  --stage dev

One stack per stage (``metro-{stage}-emr``) next to the storage and app stacks of infra/deploy.py:

* an ``AWS::EMRServerless::Application`` (Spark, EMR 7 = Spark 3.5, ``ARM64``) that starts when a job is submitted
  and stops 15 idle minutes after the last one: no pre-initialized capacity, so nothing is billed between runs;
  its maximum capacity caps what a night can cost;
* the job execution role: the stage's bucket prefixes the jobs use (``raw/``, ``archive/``, ``metrics/``,
  ``locks/``; the code under ``emr/code/``, the logs under ``emr/logs/``), Query on the messages table, Scan on
  the resources table, SendMessage to the stage's queues (replay); nothing else;
* EventBridge Scheduler schedules in the stage's group, one per nightly job (compaction 02:15, retention 04:15,
  metrics 05:45 UTC), each a ``StartJobRun`` through the universal target
  ``arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun``, with a role that may start runs on this application
  and pass it the job role only;
* failure notifications: an EventBridge rule on "EMR Serverless Job Run State Change" with state FAILED for this
  application, to the SNS topic given (``AlarmTopicArn``: the app stack's alarm topic) or, when none is, a topic of
  its own.

The code (spark_emr + chalicelib in ``metro-emr.zip``, on the path through ``spark.submit.pyFiles``, the setting
``--py-files`` makes on EC2; the job scripts) and the Python
environment (infra/emr/venv.py: exactly requirements-emr.txt for arm64) go to the stage's bucket under
``emr/code/{version}/``, the version being a hash of their bytes; the stack's ``CodeVersion`` names the one the
schedules run.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from infra.emr import cluster, package, steps
from infra.emr import venv as emr_venv
from infra.names import StageNames, check_stage

RELEASE = cluster.RELEASE  # the same EMR 7 (Spark 3.5) as the EC2 variant
ARCHITECTURE = "ARM64"
IDLE_STOP_MINUTES = 15
# The ceiling of one application: three jobs run one after another, each at most a driver and 8 executors
MAXIMUM_CAPACITY = {"Cpu": "40 vCPU", "Memory": "160 GB", "Disk": "1000 GB"}
SCHEDULES = {  # UTC; retention after compaction (both take the maintenance lock), metrics after retention
    "compact": "cron(15 2 * * ? *)",
    "retention": "cron(15 4 * * ? *)",
    "metrics": "cron(45 5 * * ? *)",
}
TIMEOUT_MINUTES = {"compact": 115, "retention": 85, "metrics": 60, "replay": 240}  # each ends before the next starts
UNIVERSAL_TARGET = "arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun"
FAILED_EVENT = "EMR Serverless Job Run State Change"
# Worker sizes EMR Serverless accepts (cores with memory + overhead in range): driver 2 vCPU / 7 GB, executors
# 4 vCPU / 14 GB, at most 8 of them per job (34 vCPU, 119 GB with the driver: under MAXIMUM_CAPACITY).
SPARK_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
    "spark.network.timeout": "600s",
    "spark.driver.cores": "2",
    "spark.driver.memory": "5g",
    "spark.driver.memoryOverhead": "2g",  # the driver's Python process (listings, plans) lives here
    "spark.executor.cores": "4",
    "spark.executor.memory": "7g",
    "spark.executor.memoryOverhead": "7g",  # Arrow decoding, merging, Parquet in the Python workers
    "spark.dynamicAllocation.maxExecutors": "8",
}


@dataclass(frozen=True)
class ServerlessNames:
    """The EMR Serverless stack's names for one stage (the tables, bucket and queues are infra/names.py's)."""

    stage: str

    @property
    def base(self) -> StageNames:
        return StageNames(self.stage)

    @property
    def prefix(self) -> str:
        return self.base.prefix

    @property
    def stack(self) -> str:
        return f"{self.prefix}-emr"

    @property
    def application(self) -> str:
        return f"{self.prefix}-jobs"

    @property
    def job_role(self) -> str:
        return f"{self.prefix}-emr-serverless-job"

    @property
    def scheduler_role(self) -> str:
        return f"{self.prefix}-emr-serverless-scheduler"

    @property
    def schedule_group(self) -> str:
        return f"{self.prefix}-emr"

    def schedule(self, job: str) -> str:
        return f"{self.prefix}-{job}"

    @property
    def failure_rule(self) -> str:
        return f"{self.prefix}-emr-job-failed"

    @property
    def failure_topic(self) -> str:
        return f"{self.prefix}-emr-failures"

    @staticmethod
    def code_prefix(version: str) -> str:
        """Key prefix in the stage's bucket of one version of the code and environment."""
        return f"emr/code/{version}"

    log_prefix = "emr/logs/"


# --- the job runs -------------------------------------------------------------------------------------------


def venv_conf(archive_uri: str) -> dict[str, str]:
    """EMR Serverless's documented way to run PySpark with a packed environment."""
    return {
        "spark.archives": f"{archive_uri}#environment",
        "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON": "./environment/bin/python",
        "spark.emr-serverless.driverEnv.PYSPARK_PYTHON": "./environment/bin/python",
        "spark.executorEnv.PYSPARK_PYTHON": "./environment/bin/python",
    }


def spark_submit_parameters(code_uri: str, region: str) -> str:
    """``--conf k=v ...``: the code bundle (``spark.submit.pyFiles``, what ``--py-files`` sets), the environment,
    the region, the sizing."""
    conf = {
        "spark.submit.pyFiles": f"{code_uri}/metro-emr.zip",
        **venv_conf(f"{code_uri}/{emr_venv.ARCHIVE}"),
        # boto3 in the jobs: the region of the stage (the workers' environment may not say)
        "spark.emr-serverless.driverEnv.AWS_REGION": region,
        "spark.executorEnv.AWS_REGION": region,
        **SPARK_CONF,
    }
    parts = []
    for k, v in conf.items():
        if any(c.isspace() for c in k + v):
            raise ValueError(f"no white space in Spark settings: {k}={v!r}")
        parts += ["--conf", f"{k}={v}"]
    return " ".join(parts)


def job_arguments(stage: str, bucket: str, job: str, extra: dict[str, Any] | None = None) -> list[str]:
    """The job's command line: the stage's tables, and the nightly options of infra/emr/steps.py."""
    n = StageNames(stage)
    nightly = steps.nightly_extras(resources_table=n.resources_table)
    options = {**nightly.get(job, {}), **(extra or {})}
    return steps.job_args(job, bucket, n.messages_table, options)


def start_job_run_request(stage: str, bucket: str, region: str, application_id: str, role_arn: str, version: str,
                          job: str, extra: dict[str, Any] | None = None, client_token: str = "") -> dict[str, Any]:
    """``StartJobRun``'s request in the API's own member names (boto3 takes it as keyword arguments)."""
    n = ServerlessNames(stage)
    code_uri = f"s3://{bucket}/{n.code_prefix(version)}"
    request: dict[str, Any] = {
        "applicationId": application_id,
        "executionRoleArn": role_arn,
        "name": f"{n.prefix}-{job}",
        "jobDriver": {"sparkSubmit": {
            "entryPoint": f"{code_uri}/jobs/{job}.py",
            "entryPointArguments": job_arguments(stage, bucket, job, extra),
            "sparkSubmitParameters": spark_submit_parameters(code_uri, region),
        }},
        "configurationOverrides": {"monitoringConfiguration": {
            "s3MonitoringConfiguration": {"logUri": f"s3://{bucket}/{n.log_prefix}"}}},
        "executionTimeoutMinutes": TIMEOUT_MINUTES.get(job, 240),
        "tags": {"app": "metro", "stage": stage, "job": job},
    }
    if client_token:
        request["clientToken"] = client_token
    return request


def pascal(value: Any) -> Any:
    """The request as EventBridge Scheduler's universal targets take it: member names in PascalCase."""
    if isinstance(value, dict):
        return {(k[:1].upper() + k[1:] if k != "tags" else "Tags"): (v if k == "tags" else pascal(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [pascal(v) for v in value]
    return value


# --- the template -------------------------------------------------------------------------------------------


def _sub(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}


def _arn(service: str, resource: str, region: bool = True, account: bool = True) -> dict[str, str]:
    return _sub(f"arn:${{AWS::Partition}}:{service}:{'${AWS::Region}' if region else ''}:"
                f"{'${AWS::AccountId}' if account else ''}:{resource}")


def job_role_policy(stage: str) -> dict[str, Any]:
    """What the jobs touch (read from spark_emr/): the stage's data prefixes, its two tables, its queues."""
    n = StageNames(stage)
    bucket = f"arn:${{AWS::Partition}}:s3:::{n.bucket}"
    data_prefixes = ["raw/", "raw/*", "archive/", "archive/*", "metrics/", "metrics/*", "locks/*"]
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListJobPrefixes", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": _sub(bucket),
         "Condition": {"StringLike": {"s3:prefix": data_prefixes}}},
        {"Sid": "RawRead", "Effect": "Allow", "Action": ["s3:GetObject", "s3:DeleteObject"],
         "Resource": _sub(f"{bucket}/raw/*")},
        {"Sid": "ArchiveMetricsLock", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": [_sub(f"{bucket}/archive/*"), _sub(f"{bucket}/metrics/*"), _sub(f"{bucket}/locks/*")]},
        {"Sid": "CodeRead", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": _sub(f"{bucket}/emr/code/*")},
        {"Sid": "LogsWrite", "Effect": "Allow", "Action": ["s3:PutObject"],
         "Resource": _sub(f"{bucket}/{ServerlessNames.log_prefix}*")},
        {"Sid": "ReplayQuery", "Effect": "Allow", "Action": ["dynamodb:Query", "dynamodb:BatchGetItem"],
         "Resource": _arn("dynamodb", f"table/{n.messages_table}")},
        {"Sid": "RetentionSettings", "Effect": "Allow", "Action": ["dynamodb:Scan"],
         "Resource": _arn("dynamodb", f"table/{n.resources_table}")},
        {"Sid": "ReplaySend", "Effect": "Allow", "Action": ["sqs:SendMessage"],
         "Resource": _arn("sqs", f"{n.queue_prefix}-*")},
    ]}


def _job_input(stage: str, job: str) -> dict[str, str]:
    """The schedule's Input: ``StartJobRun`` with CloudFormation filling in the application, role and version."""
    request = start_job_run_request(
        stage, StageNames(stage).bucket, "${AWS::Region}", "${Application.ApplicationId}", "${JobRole.Arn}",
        "${CodeVersion}", job, client_token="<aws.scheduler.execution-id>")  # a retried invocation: one run
    return _sub(json.dumps(pascal(request), sort_keys=True))


def template(stage: str) -> dict[str, Any]:
    """The stage's EMR Serverless stack."""
    check_stage(stage)
    n = ServerlessNames(stage)
    trust_emr = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "emr-serverless.amazonaws.com"}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                      "ArnLike": {"aws:SourceArn": [{"Fn::GetAtt": ["Application", "Arn"]},
                                                    _sub("${Application.Arn}/jobruns/*")]}}}]}
    trust_scheduler = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                      "ArnLike": {"aws:SourceArn": _arn("scheduler", f"schedule/{n.schedule_group}/*")}}}]}
    scheduler_policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "StartNightlyRuns", "Effect": "Allow", "Action": ["emr-serverless:StartJobRun"],
         "Resource": [{"Fn::GetAtt": ["Application", "Arn"]}, _sub("${Application.Arn}/jobruns/*")]},
        {"Sid": "TagNightlyRuns", "Effect": "Allow", "Action": ["emr-serverless:TagResource"],
         "Resource": _sub("${Application.Arn}/jobruns/*")},
        {"Sid": "PassJobRole", "Effect": "Allow", "Action": ["iam:PassRole"],
         "Resource": {"Fn::GetAtt": ["JobRole", "Arn"]},
         "Condition": {"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}}},
    ]}
    tags = [{"Key": "app", "Value": "metro"}, {"Key": "stage", "Value": stage}]
    resources: dict[str, Any] = {
        "Application": {"Type": "AWS::EMRServerless::Application", "Properties": {
            "Name": n.application, "ReleaseLabel": RELEASE, "Type": "Spark", "Architecture": ARCHITECTURE,
            "AutoStartConfiguration": {"Enabled": True},
            "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": IDLE_STOP_MINUTES},
            "MaximumCapacity": MAXIMUM_CAPACITY, "Tags": tags}},
        "JobRole": {"Type": "AWS::IAM::Role", "Properties": {
            "RoleName": n.job_role, "Description": f"Metro {stage}: the spark_emr jobs on EMR Serverless",
            "AssumeRolePolicyDocument": trust_emr,
            "Policies": [{"PolicyName": "metro-jobs", "PolicyDocument": job_role_policy(stage)}], "Tags": tags}},
        "SchedulerRole": {"Type": "AWS::IAM::Role", "Properties": {
            "RoleName": n.scheduler_role,
            "Description": f"Metro {stage}: EventBridge Scheduler starts the nightly jobs",
            "AssumeRolePolicyDocument": trust_scheduler,
            "Policies": [{"PolicyName": "start-nightly-jobs", "PolicyDocument": scheduler_policy}], "Tags": tags}},
        "ScheduleGroup": {"Type": "AWS::Scheduler::ScheduleGroup", "Properties": {"Name": n.schedule_group,
                                                                                    "Tags": tags}},
        "FailureTopic": {"Type": "AWS::SNS::Topic", "Condition": "OwnTopic",
                         "Properties": {"TopicName": n.failure_topic, "Tags": tags}},
        "FailureTopicPolicy": {"Type": "AWS::SNS::TopicPolicy", "Condition": "OwnTopic", "Properties": {
            "Topics": [{"Ref": "FailureTopic"}],
            "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Sid": "FailedJobRuns", "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sns:Publish", "Resource": {"Ref": "FailureTopic"},
                "Condition": {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["FailureRule", "Arn"]}}}}]}}},
        "FailureRule": {"Type": "AWS::Events::Rule", "Properties": {
            "Name": n.failure_rule, "Description": f"Metro {stage}: a Spark job run on EMR Serverless failed",
            "State": "ENABLED",
            "EventPattern": {"source": ["aws.emr-serverless"], "detail-type": [FAILED_EVENT],
                             "detail": {"state": ["FAILED"],
                                        "applicationId": [{"Fn::GetAtt": ["Application", "ApplicationId"]}]}},
            "Targets": [{
                "Id": "failure-topic",
                "Arn": {"Fn::If": ["OwnTopic", {"Ref": "FailureTopic"}, {"Ref": "AlarmTopicArn"}]},
                "InputTransformer": {
                    "InputPathsMap": {"run": "$.detail.jobRunId", "app": "$.detail.applicationId",
                                      "state": "$.detail.state", "time": "$.time"},
                    "InputTemplate": _sub(
                        f'"Metro {stage}: EMR Serverless job run <run> on application <app> ended <state> at '
                        f'<time>. Logs: s3://{n.base.bucket}/{n.log_prefix}applications/<app>/jobs/<run>/"'),
                }}]}},
    }
    for job, expression in SCHEDULES.items():
        resources[f"Schedule{job.capitalize()}"] = {"Type": "AWS::Scheduler::Schedule", "Properties": {
            "Name": n.schedule(job), "GroupName": {"Ref": "ScheduleGroup"},
            "Description": f"Metro {stage}: nightly {job} on EMR Serverless",
            "ScheduleExpression": expression, "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},  # the order of the three matters: no drift
            "State": {"Ref": "ScheduleState"},
            "Target": {"Arn": UNIVERSAL_TARGET, "RoleArn": {"Fn::GetAtt": ["SchedulerRole", "Arn"]},
                       "Input": _job_input(stage, job),
                       "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600}}}}
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"Metro {stage}: the nightly Spark jobs on EMR Serverless (arm64), schedules, failure alerts",
        "Parameters": {
            "CodeVersion": {"Type": "String", "AllowedPattern": "^[A-Za-z0-9._-]{1,64}$",
                            "Description": "the version under emr/code/ in the stage's bucket the jobs run"},
            "AlarmTopicArn": {"Type": "String", "Default": "",
                              "Description": "SNS topic told of failed job runs (the app stack's alarm topic); "
                                             "empty: a topic of this stack"},
            "ScheduleState": {"Type": "String", "Default": "ENABLED", "AllowedValues": ["ENABLED", "DISABLED"]},
        },
        "Conditions": {"OwnTopic": {"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}},
        "Resources": resources,
        "Outputs": {
            "ApplicationId": {"Value": {"Fn::GetAtt": ["Application", "ApplicationId"]}},
            "JobRoleArn": {"Value": {"Fn::GetAtt": ["JobRole", "Arn"]}},
            "FailureTopicArn": {"Value": {"Fn::If": ["OwnTopic", {"Ref": "FailureTopic"}, {"Ref": "AlarmTopicArn"}]}},
            "CodeVersion": {"Value": {"Ref": "CodeVersion"}},
        },
    }


# --- deploy, run, destroy -----------------------------------------------------------------------------------

cli = typer.Typer(add_completion=False, help="The spark_emr jobs on EMR Serverless: deploy, run, destroy.")


def code_files(out: Path, archive: Path) -> dict[str, Path]:
    """``{key below emr/code/<version>/: file}``: the bundle, the job scripts, the environment archive."""
    z = package.build_zip(out)
    files = {"metro-emr.zip": z, emr_venv.ARCHIVE: archive}
    files.update({f"jobs/{p.name}": p for p in package.copy_jobs(out)})
    return files


def version_of(files: dict[str, Path]) -> str:
    digest = hashlib.sha256()
    for key in sorted(files):
        digest.update(key.encode() + b"\0" + hashlib.sha256(files[key].read_bytes()).digest())
    return digest.hexdigest()[:20]


def checked_archive(archive: Path, allow_system_python: bool) -> dict[str, Any]:
    manifest = emr_venv.read_manifest(archive)
    if manifest.get("arch") != "aarch64":
        raise SystemExit(f"{archive} is for {manifest.get('arch')}; the application is ARM64 (aarch64)")
    if manifest.get("requirements") != emr_venv.pins():
        raise SystemExit(f"{archive} does not hold exactly infra/emr/requirements-emr.txt: rebuild it")
    if manifest.get("interpreter") != "bundled" and not allow_system_python:
        raise SystemExit(f"{archive} has no interpreter of its own (bin/python -> {manifest.get('from')}); EMR "
                         "Serverless 7's image has Python 3.9 only. Build it on an arm64 machine with --interpreter "
                         "(infra/emr/venv.py), or pass --allow-system-python for an image that has python3.11")
    return manifest


@cli.command("template")
def print_template(stage: str = typer.Option(...)) -> None:
    """Print the stage's template."""
    typer.echo(json.dumps(template(stage), indent=2, sort_keys=True))


@cli.command()
def deploy(
    stage: str = typer.Option(..., help="the stage: dev, prod, ... (deployed first with `make deploy`)"),
    region: str = typer.Option("", help="default: AWS_REGION / AWS_DEFAULT_REGION"),
    venv: str = typer.Option("", help="a venv.tar.gz built by infra/emr/venv.py (default: build one here)"),
    interpreter: str = typer.Option("", help="building here: a CPython 3.11 for arm64 to copy into the archive"),
    allow_system_python: bool = typer.Option(False, "--allow-system-python",
                                             help="accept an archive whose bin/python is /usr/bin/python3.11"),
    alarm_topic_arn: str = typer.Option("", help="SNS topic for failed runs (default: a topic of the stack)"),
    paused: bool = typer.Option(False, "--paused", help="deploy the schedules DISABLED"),
) -> None:
    """Upload code and environment, then create or update the stack through a change set."""
    from infra import deploy as app_deploy

    t = app_deploy.target(stage, app_deploy._region(region))
    cfn = app_deploy.session_client("cloudformation", t.region)
    if not app_deploy.stack_status(cfn, t.names.storage_stack):
        typer.echo(f"no stack {t.names.storage_stack}: deploy the stage first (make deploy STAGE={stage})", err=True)
        raise typer.Exit(1)
    n = ServerlessNames(stage)
    with tempfile.TemporaryDirectory(prefix="metro-emr-") as tmp:
        out = Path(tmp)
        archive = Path(venv) if venv else emr_venv.build(out / "venv", "aarch64", interpreter)[0]
        checked_archive(archive, allow_system_python)
        files = code_files(out, archive)
        version = version_of(files)
        s3 = app_deploy.session_client("s3", t.region)
        for key, path in sorted(files.items()):
            s3.upload_file(str(path), t.bucket, f"{n.code_prefix(version)}/{key}")
        typer.echo(f"uploaded code version {version} to s3://{t.bucket}/{n.code_prefix(version)}/ "
                   f"(environment {archive.stat().st_size / 2**20:.1f} MiB)")
    parameters = {"CodeVersion": version, "AlarmTopicArn": alarm_topic_arn,
                  "ScheduleState": "DISABLED" if paused else "ENABLED"}
    body = json.dumps(template(stage), sort_keys=True)
    changed = app_deploy.apply_change_set(cfn, n.stack, {"TemplateBody": body}, parameters)
    found = app_deploy.outputs(cfn, n.stack)
    typer.echo(f"{'deployed' if changed else 'no changes'}: {n.stack} in {t.account}/{t.region}: application "
               f"{found.get('ApplicationId')}, failures to {found.get('FailureTopicArn')}")


@cli.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    stage: str = typer.Option(...),
    job: str = typer.Option(..., help="compact, retention, metrics or replay; extra arguments go to the job"),
    region: str = typer.Option(""),
) -> None:
    """Start one job run now with the deployed code version (the schedules' request, plus the extra arguments)."""
    from infra import deploy as app_deploy

    t = app_deploy.target(stage, app_deploy._region(region))
    n = ServerlessNames(stage)
    found = app_deploy.outputs(app_deploy.session_client("cloudformation", t.region), n.stack)
    request = start_job_run_request(stage, t.bucket, t.region, found["ApplicationId"], found["JobRoleArn"],
                                    found["CodeVersion"], job)
    request["jobDriver"]["sparkSubmit"]["entryPointArguments"] += list(ctx.args)
    started = app_deploy.session_client("emr-serverless", t.region).start_job_run(**request)
    typer.echo(f"started {job}: job run {started['jobRunId']} on {found['ApplicationId']}; logs under "
               f"s3://{t.bucket}/{n.log_prefix}applications/{found['ApplicationId']}/jobs/{started['jobRunId']}/")


@cli.command()
def destroy(stage: str = typer.Option(...), region: str = typer.Option("")) -> None:
    """Stop the application and delete the stack; code and logs under emr/ in the bucket stay (`make destroy
    DELETE_DATA=1` empties the bucket)."""
    from infra import deploy as app_deploy

    t = app_deploy.target(stage, app_deploy._region(region))
    cfn = app_deploy.session_client("cloudformation", t.region)
    n = ServerlessNames(stage)
    if not app_deploy.stack_status(cfn, n.stack):
        typer.echo(f"no stack {n.stack}")
        return
    app_id = app_deploy.outputs(cfn, n.stack).get("ApplicationId", "")
    if app_id:  # an application is deleted only once stopped
        emr = app_deploy.session_client("emr-serverless", t.region)
        if emr.get_application(applicationId=app_id)["application"]["state"] in ("STARTING", "STARTED"):
            emr.stop_application(applicationId=app_id)
    cfn.delete_stack(StackName=n.stack)
    cfn.get_waiter("stack_delete_complete").wait(StackName=n.stack, WaiterConfig=app_deploy.WAIT)
    typer.echo(f"deleted {n.stack}; code and logs under s3://{t.bucket}/emr/ kept")


if __name__ == "__main__":
    cli()
