"""infra/emr/serverless.py's commands with the AWS calls replaced (no AWS here): what deploy uploads and submits,
what run starts (checked against botocore's model), what destroy stops and deletes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from infra import deploy as app_deploy
from infra.emr import serverless
from infra.emr import venv as emr_venv
from infra.names import StageNames

ACCOUNT, REGION = "123456789012", "eu-west-1"


class Fake:
    """Every client: records calls, answers what the commands read."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.state = "STARTED"

    def upload_file(self, path: str, bucket: str, key: str) -> None:
        self.calls.append(("upload_file", {"bucket": bucket, "key": key, "size": Path(path).stat().st_size}))

    def start_job_run(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("start_job_run", kwargs))
        return {"jobRunId": "00run", "applicationId": kwargs["applicationId"]}

    def get_application(self, applicationId: str) -> dict[str, Any]:
        return {"application": {"state": self.state}}

    def stop_application(self, applicationId: str) -> None:
        self.calls.append(("stop_application", {"applicationId": applicationId}))

    def delete_stack(self, StackName: str) -> None:
        self.calls.append(("delete_stack", {"StackName": StackName}))

    def get_waiter(self, name: str) -> Any:
        fake = self

        class Waiter:
            def wait(self, **kwargs: Any) -> None:
                fake.calls.append(("wait", {"name": name, **kwargs}))

        return Waiter()


@pytest.fixture()
def aws(monkeypatch: pytest.MonkeyPatch) -> Fake:
    fake = Fake()
    stacks: dict[str, str] = {"metro-dev-storage": "CREATE_COMPLETE", "metro-dev-emr": "CREATE_COMPLETE"}
    monkeypatch.setattr(app_deploy, "target", lambda stage, region: app_deploy.Target(StageNames(stage), ACCOUNT,
                                                                                      region))
    monkeypatch.setattr(app_deploy, "_region", lambda region: region or REGION)
    monkeypatch.setattr(app_deploy, "session_client", lambda service, region: fake)
    monkeypatch.setattr(app_deploy, "stack_status", lambda cfn, stack: stacks.get(stack, ""))

    def apply(cfn: Any, stack: str, source: dict[str, str], parameters: dict[str, str]) -> bool:
        fake.calls.append(("change_set", {"stack": stack, "template": json.loads(source["TemplateBody"]),
                                          "parameters": parameters}))
        return True

    monkeypatch.setattr(app_deploy, "apply_change_set", apply)
    monkeypatch.setattr(app_deploy, "outputs", lambda cfn, stack: {
        "ApplicationId": "00app", "JobRoleArn": f"arn:aws:iam::{ACCOUNT}:role/metro-dev-emr-serverless-job",
        "CodeVersion": "v123", "FailureTopicArn": "arn:aws:sns:eu-west-1:1:t"})
    return fake


def _archive(tmp_path: Path, interpreter: str = "bundled") -> Path:
    env = tmp_path / "environment"
    env.mkdir(parents=True)
    (env / emr_venv.MANIFEST).write_text(json.dumps({"arch": "aarch64", "interpreter": interpreter,
                                                     "from": "/usr/bin/python3.11", "requirements": emr_venv.pins()}))
    return emr_venv.write_archive(env, tmp_path / "venv.tar.gz")


def test_deploy_uploads_one_content_addressed_version_and_submits_the_stack(aws: Fake, tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    done = CliRunner().invoke(serverless.cli, ["deploy", "--stage", "dev", "--venv", str(archive),
                                               "--alarm-topic-arn", "arn:aws:sns:eu-west-1:1:alarms"])
    assert done.exit_code == 0, done.output
    uploads = [c[1] for c in aws.calls if c[0] == "upload_file"]
    bucket = f"metro-dev-{ACCOUNT}-{REGION}"
    assert {u["bucket"] for u in uploads} == {bucket}
    keys = sorted(u["key"] for u in uploads)
    version = keys[0].split("/")[2]
    assert keys == sorted(f"emr/code/{version}/{k}" for k in (
        "metro-emr.zip", "venv.tar.gz", "jobs/compact.py", "jobs/retention.py", "jobs/metrics.py", "jobs/replay.py"))
    (change,) = [c[1] for c in aws.calls if c[0] == "change_set"]
    assert change["stack"] == "metro-dev-emr" and change["template"] == serverless.template("dev")
    assert change["parameters"] == {"CodeVersion": version, "AlarmTopicArn": "arn:aws:sns:eu-west-1:1:alarms",
                                    "ScheduleState": "ENABLED"}
    again = CliRunner().invoke(serverless.cli, ["deploy", "--stage", "dev", "--venv", str(archive)])
    assert again.exit_code == 0
    assert [c[1]["key"] for c in aws.calls if c[0] == "upload_file"][len(uploads):][0].split("/")[2] == version


def test_deploy_refuses_an_archive_without_its_own_python_and_a_stage_without_storage(
        aws: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _archive(tmp_path, interpreter="system")
    done = CliRunner().invoke(serverless.cli, ["deploy", "--stage", "dev", "--venv", str(archive)])
    assert done.exit_code != 0 and "Python 3.9" in str(done.exception)
    assert not [c for c in aws.calls if c[0] in ("upload_file", "change_set")]
    allowed = CliRunner().invoke(serverless.cli, ["deploy", "--stage", "dev", "--venv", str(archive), "--paused",
                                                  "--allow-system-python"])
    assert allowed.exit_code == 0, allowed.output
    assert [c[1]["parameters"]["ScheduleState"] for c in aws.calls if c[0] == "change_set"] == ["DISABLED"]
    monkeypatch.setattr(app_deploy, "stack_status", lambda cfn, stack: "")
    missing = CliRunner().invoke(serverless.cli, ["deploy", "--stage", "dev", "--venv", str(archive)])
    assert missing.exit_code == 1 and "make deploy STAGE=dev" in missing.output


def test_run_starts_the_scheduled_request_with_extra_arguments(aws: Fake) -> None:
    from botocore.session import get_session
    from botocore.validate import ParamValidator

    done = CliRunner().invoke(serverless.cli, ["run", "--stage", "dev", "--job", "compact", "--",
                                               "--min-age-seconds", "0"])
    assert done.exit_code == 0, done.output
    ((_, request),) = [c for c in aws.calls if c[0] == "start_job_run"]
    assert request["applicationId"] == "00app" and request["executionRoleArn"].endswith("metro-dev-emr-serverless-job")
    args = request["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert args[-4:] == ["--min-age-seconds", "3600", "--min-age-seconds", "0"]  # the last one wins (argparse)
    assert "/emr/code/v123/jobs/compact.py" in request["jobDriver"]["sparkSubmit"]["entryPoint"]
    shape = get_session().get_service_model("emr-serverless").operation_model("StartJobRun").input_shape
    assert shape is not None
    report = ParamValidator().validate({**request, "clientToken": "t"}, shape)
    assert not report.has_errors(), report.generate_report()


def test_destroy_stops_the_application_then_deletes_the_stack(aws: Fake) -> None:
    done = CliRunner().invoke(serverless.cli, ["destroy", "--stage", "dev"])
    assert done.exit_code == 0, done.output
    assert [c[0] for c in aws.calls] == ["stop_application", "delete_stack", "wait"]
    assert aws.calls[1][1] == {"StackName": "metro-dev-emr"}
    aws.calls.clear()
    aws.state = "STOPPED"
    CliRunner().invoke(serverless.cli, ["destroy", "--stage", "dev"])
    assert [c[0] for c in aws.calls] == ["delete_stack", "wait"]
