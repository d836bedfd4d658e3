"""infra/emr/serverless.py: the EMR Serverless stack of a stage (pure: the template dict), its job runs checked
against botocore's model of StartJobRun, and cfn-lint over the template."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from chalicelib.core.replay import archive_layout as layout
from infra.emr import serverless, steps
from infra.emr import venv as emr_venv
from infra.names import StageNames
from spark_emr import lock

STAGES = ("dev", "prod")


@pytest.fixture(scope="module", params=STAGES)
def stage(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def tpl(stage: str) -> dict[str, Any]:
    return serverless.template(stage)


def resources(tpl: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in tpl["Resources"].items() if v["Type"] == kind}


def subbed(value: Any) -> str:
    """A ``Fn::Sub`` string (or a plain one)."""
    return value["Fn::Sub"] if isinstance(value, dict) else str(value)


def schedule_inputs(tpl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for props in resources(tpl, "AWS::Scheduler::Schedule").values():
        request = json.loads(subbed(props["Target"]["Input"]))
        found[request["Tags"]["job"]] = request
    return found


def test_every_name_carries_the_stage_so_stages_share_an_account(tpl: dict[str, Any], stage: str) -> None:
    n = serverless.ServerlessNames(stage)
    other = next(s for s in STAGES if s != stage)
    names = [props.get("Name") or props.get("RoleName") or props.get("TopicName")
             for res in tpl["Resources"].values() for props in [res["Properties"]]
             if res["Type"] != "AWS::SNS::TopicPolicy"]
    assert all(isinstance(name, str) and name.startswith(f"metro-{stage}-") for name in names), names
    assert {n.application, n.job_role, n.scheduler_role, n.schedule_group, n.failure_rule,
            n.failure_topic} <= set(names)
    assert f"metro-{other}" not in json.dumps(tpl)
    assert len(n.scheduler_role) <= 64 and len(serverless.ServerlessNames("a" * 16).job_role) <= 64  # IAM's limit


def test_the_application_is_arm64_emr7_and_costs_nothing_idle(tpl: dict[str, Any]) -> None:
    (app,) = resources(tpl, "AWS::EMRServerless::Application").values()
    assert app["Architecture"] == "ARM64" and app["Type"] == "Spark"
    assert re.fullmatch(r"emr-7\.\d+\.\d+", app["ReleaseLabel"])  # Spark 3.5
    assert app["AutoStartConfiguration"] == {"Enabled": True}
    assert app["AutoStopConfiguration"]["Enabled"] and app["AutoStopConfiguration"]["IdleTimeoutMinutes"] <= 15
    assert "InitialCapacity" not in app  # pre-initialized workers would bill while idle
    assert set(app["MaximumCapacity"]) == {"Cpu", "Memory", "Disk"}


def test_one_schedule_per_nightly_job_through_the_universal_target(tpl: dict[str, Any], stage: str) -> None:
    schedules = resources(tpl, "AWS::Scheduler::Schedule")
    assert len(schedules) == 3
    for props in schedules.values():
        target = props["Target"]
        assert target["Arn"] == "arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun"
        assert target["RoleArn"] == {"Fn::GetAtt": ["SchedulerRole", "Arn"]}
        assert props["GroupName"] == {"Ref": "ScheduleGroup"} and props["FlexibleTimeWindow"] == {"Mode": "OFF"}
        assert props["ScheduleExpressionTimezone"] == "UTC" and props["State"] == {"Ref": "ScheduleState"}
        assert len(subbed(target["Input"])) <= 8192  # EventBridge Scheduler's limit
    inputs = schedule_inputs(tpl)
    assert set(inputs) == set(steps.NIGHTLY)
    n, base = serverless.ServerlessNames(stage), StageNames(stage)
    for job, request in inputs.items():
        assert request["ApplicationId"] == "${Application.ApplicationId}"
        assert request["ExecutionRoleArn"] == "${JobRole.Arn}"
        assert request["ClientToken"] == "<aws.scheduler.execution-id>"  # a retried invocation starts one run
        submit = request["JobDriver"]["SparkSubmit"]
        code = f"s3://{base.bucket}/emr/code/${{CodeVersion}}"
        assert submit["EntryPoint"] == f"{code}/jobs/{job}.py"
        params = submit["SparkSubmitParameters"]
        for conf in (f"spark.submit.pyFiles={code}/metro-emr.zip", f"spark.archives={code}/venv.tar.gz#environment",
                     "spark.emr-serverless.driverEnv.PYSPARK_PYTHON=./environment/bin/python",
                     "spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python"):
            assert f"--conf {conf} " in params + " "
        args = submit["EntryPointArguments"]
        assert args[:4] == ["--bucket", base.bucket, "--messages-table", base.messages_table]
        assert request["ConfigurationOverrides"]["MonitoringConfiguration"]["S3MonitoringConfiguration"][
            "LogUri"] == f"s3://{base.bucket}/{n.log_prefix}"
    retention = inputs["retention"]["JobDriver"]["SparkSubmit"]["EntryPointArguments"]
    assert retention[retention.index("--resources-table") + 1] == base.resources_table
    # the nightly order of the EC2 steps: each job is over (its timeout) before the next one starts
    starts = {job: _minutes(expr) for job, expr in serverless.SCHEDULES.items()}
    assert starts["compact"] < starts["retention"] < starts["metrics"]
    assert starts["compact"] + serverless.TIMEOUT_MINUTES["compact"] < starts["retention"]
    assert starts["retention"] + serverless.TIMEOUT_MINUTES["retention"] < starts["metrics"]


def _minutes(cron: str) -> int:
    minute, hour = cron.removeprefix("cron(").split()[:2]
    return int(hour) * 60 + int(minute)


def test_the_schedules_request_is_a_valid_start_job_run() -> None:
    """The request, in the API's member names, passes botocore's validation of StartJobRun; the schedule's Input
    is the same request in PascalCase (what the universal target takes)."""
    from botocore.session import get_session
    from botocore.validate import ParamValidator

    shape = get_session().get_service_model("emr-serverless").operation_model("StartJobRun").input_shape
    assert shape is not None
    for job in (*steps.NIGHTLY, "replay"):
        request = serverless.start_job_run_request("dev", "metro-dev-1-us-east-1", "us-east-1", "00abc",
                                                   "arn:aws:iam::1:role/r", "v1", job, client_token="t")
        report = ParamValidator().validate(request, shape)
        assert not report.has_errors(), report.generate_report()
        assert _camel(serverless.pascal(request)) == request


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {(k[:1].lower() + k[1:] if k != "Tags" else "tags"): (v if k == "Tags" else _camel(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def test_the_job_scripts_accept_the_scheduled_arguments() -> None:
    from spark_emr import common

    inputs = schedule_inputs(serverless.template("dev"))
    p = common.base_parser("x")
    common.add_lock_arguments(p)
    for flag in ("--min-age-seconds", "--retention-seconds"):
        p.add_argument(flag, type=int)
    p.add_argument("--resources-table")
    p.add_argument("--topic-retention", action="append", default=[])
    for job in steps.NIGHTLY:
        parsed = p.parse_args(inputs[job]["JobDriver"]["SparkSubmit"]["EntryPointArguments"])
        assert parsed.bucket.startswith("metro-dev-") and parsed.json


def _statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    return [st for policy in role["Policies"] for st in policy["PolicyDocument"]["Statement"]]


def test_the_job_role_grants_only_what_the_jobs_touch_in_this_stage(tpl: dict[str, Any], stage: str) -> None:
    role = resources(tpl, "AWS::IAM::Role")
    assert role["JobRole"]["RoleName"] == serverless.ServerlessNames(stage).job_role
    statements = _statements(role["JobRole"])
    base = StageNames(stage)
    grants: dict[str, set[str]] = {}
    for st in statements:
        assert st["Effect"] == "Allow"
        targets = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        for target in targets:
            text = subbed(target)
            assert text != "*" and (base.bucket in text or f"table/metro-{stage}-" in text
                                    or f":metro-{stage}-*" in text), text
            grants.setdefault(text, set()).update(st["Action"])
    bucket = f"arn:${{AWS::Partition}}:s3:::{base.bucket}"
    # the prefixes the jobs read and write (spark_emr/, chalicelib.core.replay.archive_layout, spark_emr.lock)
    assert grants[f"{bucket}/{layout.RAW_PREFIX}*"] == {"s3:GetObject", "s3:DeleteObject"}
    for prefix in (layout.ARCHIVE_PREFIX, "metrics/", lock.LOCK_KEY.split("/")[0] + "/"):
        assert grants[f"{bucket}/{prefix}*"] == {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"}
    assert grants[f"{bucket}/emr/code/*"] == {"s3:GetObject"} and grants[f"{bucket}/emr/logs/*"] == {"s3:PutObject"}
    assert grants[bucket] == {"s3:ListBucket"}
    table = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/"
    # replay's raw-object lookup; compaction and replay read small requests' bytes from their log items
    assert grants[table + base.messages_table] == {"dynamodb:Query", "dynamodb:BatchGetItem"}
    assert grants[table + base.resources_table] == {"dynamodb:Scan"}  # retention's settings, compaction's topics
    assert grants[f"arn:${{AWS::Partition}}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:metro-{stage}-*"] == {
        "sqs:SendMessage"}  # replay; the fan-out DLQ (metro-{stage}_...) is not matched
    listing = next(st for st in statements if st["Action"] == ["s3:ListBucket"])
    assert set(listing["Condition"]["StringLike"]["s3:prefix"]) <= {"raw/", "raw/*", "archive/", "archive/*",
                                                                   "metrics/", "metrics/*", "locks/*"}
    trust = role["JobRole"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"] == {"Service": "emr-serverless.amazonaws.com"}
    assert trust["Statement"][0]["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_the_scheduler_may_start_runs_of_this_application_with_this_role_only(tpl: dict[str, Any], stage: str) -> None:
    role = resources(tpl, "AWS::IAM::Role")["SchedulerRole"]
    statements = {st["Sid"]: st for st in _statements(role)}
    assert statements["StartNightlyRuns"]["Action"] == ["emr-serverless:StartJobRun"]
    assert {"Fn::GetAtt": ["Application", "Arn"]} in statements["StartNightlyRuns"]["Resource"]
    assert statements["PassJobRole"]["Resource"] == {"Fn::GetAtt": ["JobRole", "Arn"]}
    assert statements["PassJobRole"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}}
    trust = role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert subbed(trust["Condition"]["ArnLike"]["aws:SourceArn"]).endswith(
        f"schedule/{serverless.ServerlessNames(stage).schedule_group}/*")  # this stage's schedules only


def test_a_failed_job_run_notifies_the_alarm_topic_or_the_stacks_own(tpl: dict[str, Any]) -> None:
    (rule,) = resources(tpl, "AWS::Events::Rule").values()
    pattern = rule["EventPattern"]
    assert pattern["source"] == ["aws.emr-serverless"]
    assert pattern["detail-type"] == ["EMR Serverless Job Run State Change"]
    assert pattern["detail"]["state"] == ["FAILED"]
    assert pattern["detail"]["applicationId"] == [{"Fn::GetAtt": ["Application", "ApplicationId"]}]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::If": ["OwnTopic", {"Ref": "FailureTopic"}, {"Ref": "AlarmTopicArn"}]}
    assert tpl["Parameters"]["AlarmTopicArn"]["Default"] == ""
    assert tpl["Conditions"]["OwnTopic"] == {"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}
    assert tpl["Resources"]["FailureTopic"]["Condition"] == "OwnTopic"
    policy = tpl["Resources"]["FailureTopicPolicy"]
    assert policy["Condition"] == "OwnTopic"
    (grant,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert grant["Principal"] == {"Service": "events.amazonaws.com"} and grant["Action"] == "sns:Publish"
    assert grant["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["FailureRule", "Arn"]}}}


def test_cfn_lint_is_clean_on_the_serverless_template(tpl: dict[str, Any], tmp_path: Path) -> None:
    exe = shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("cfn-lint is not installed (requirements-dev.txt pins it)")
    path = tmp_path / "emr.json"
    path.write_text(json.dumps(tpl))
    done = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(json.dumps(tpl, sort_keys=True)) <= 51_200  # deploy sends it as TemplateBody


def _archive(tmp_path: Path, manifest: dict[str, Any]) -> Path:
    env = tmp_path / "env"
    env.mkdir(parents=True)
    (env / emr_venv.MANIFEST).write_text(json.dumps(manifest))
    return emr_venv.write_archive(env, tmp_path / "venv.tar.gz")


def test_deploy_takes_only_an_arm64_archive_of_exactly_the_pins_with_its_own_interpreter(tmp_path: Path) -> None:
    pins = emr_venv.pins()
    good = {"arch": "aarch64", "interpreter": "bundled", "from": "/usr/bin/python3.11", "requirements": pins}
    assert serverless.checked_archive(_archive(tmp_path / "a", good), False)["arch"] == "aarch64"
    for bad, reason in (({"arch": "x86_64"}, "ARM64"), ({"requirements": {**pins, "pydantic": "1.0"}}, "exactly"),
                        ({"interpreter": "system"}, "Python 3.9")):
        archive = _archive(tmp_path / reason.replace(" ", ""), {**good, **bad})
        with pytest.raises(SystemExit, match=reason):
            serverless.checked_archive(archive, False)
    system = _archive(tmp_path / "s", {**good, "interpreter": "system"})
    assert serverless.checked_archive(system, True)["interpreter"] == "system"
    with tarfile.open(system) as tar:
        assert tar.getnames() == [emr_venv.MANIFEST]


def test_code_version_changes_with_any_byte(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"1")
    b.write_bytes(b"2")
    v1 = serverless.version_of({"x": a, "y": b})
    b.write_bytes(b"3")
    assert serverless.version_of({"x": a, "y": b}) != v1
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", v1)  # the stack parameter's pattern
