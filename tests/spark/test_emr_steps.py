"""infra/emr: step definitions submitted to an EMR cluster in moto (in-process), the bundle, the policies."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from infra.emr import package, steps

ROOT = Path(__file__).resolve().parents[2]
CODE = "s3://code-bucket/metro/v1"


@pytest.fixture()
def emr(monkeypatch: pytest.MonkeyPatch) -> Any:
    import boto3
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # in-process mock, not the moto server
    monkeypatch.setenv("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield boto3.client("emr", region_name="us-east-1")


def test_steps_are_submitted_with_their_args(emr: Any) -> None:
    cluster = emr.run_job_flow(
        Name="metro",
        ReleaseLabel="emr-7.5.0",
        Applications=[{"Name": "Spark"}],
        Instances={
            "InstanceGroups": [
                {"Name": "primary", "InstanceRole": "MASTER", "InstanceType": "m7g.xlarge", "InstanceCount": 1}
            ],
            "KeepJobFlowAliveWhenNoSteps": True,
        },
        JobFlowRole="EMR_EC2_DefaultRole",
        ServiceRole="EMR_DefaultRole",
    )["JobFlowId"]
    nightly = steps.nightly_steps(
        "metro-data", "metro-messages", CODE, retention_seconds=86400, topic_retention={"projects/p/topics/t": 3600}
    )
    rep = steps.replay_step(
        "metro-data",
        "metro-messages",
        CODE,
        "projects/p/topics/t",
        "2026-11-22T00:00:00Z",
        "2026-11-22T01:00:00Z",
        "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
        'attributes.a = "1"',
    )
    ids = steps.submit(emr, cluster, [*nightly, rep])
    assert len(ids) == 4
    listed = {s["Name"]: s for s in emr.list_steps(ClusterId=cluster)["Steps"]}
    assert set(listed) == {"metro-compact", "metro-retention", "metro-metrics", "metro-replay"}
    for name, s in listed.items():
        args = s["Config"]["Args"]
        assert s["Config"]["Jar"] == "command-runner.jar" and s["ActionOnFailure"] == "CONTINUE"
        assert args[:6] == ["spark-submit", "--deploy-mode", "cluster", "--py-files", f"{CODE}/metro-emr.zip", "--conf"]
        job = name.split("-", 1)[1]
        script = args.index(f"{CODE}/jobs/{job}.py")
        assert args[script + 1 : script + 5] == ["--bucket", "metro-data", "--messages-table", "metro-messages"]
    assert listed["metro-compact"]["Config"]["Args"][-2:] == ["--min-age-seconds", "3600"]
    retention_args = listed["metro-retention"]["Config"]["Args"]
    assert retention_args[-4:] == ["--retention-seconds", "86400", "--topic-retention", "projects/p/topics/t=3600"]
    replay_args = listed["metro-replay"]["Config"]["Args"]
    i = replay_args.index("--queue-url")
    assert replay_args[i + 1].endswith("q.fifo") and replay_args[-2:] == ["--filter", 'attributes.a = "1"']
    # the job scripts accept exactly these arguments
    from spark_emr import common

    parser = common.base_parser("x")
    parser.add_argument("--min-age-seconds", type=int)
    parsed = parser.parse_args(listed["metro-compact"]["Config"]["Args"][script + 1 :])
    assert parsed.bucket == "metro-data" and parsed.min_age_seconds == 3600 and parsed.json


def test_checked_in_schedule_matches_the_generator() -> None:
    on_disk = json.loads((ROOT / "infra/emr/nightly-schedule.json").read_text())
    assert on_disk == steps.placeholder_schedule()
    target = on_disk["Target"]
    assert target["Arn"] == "arn:aws:scheduler:::aws-sdk:emr:runJobFlow"  # a transient cluster with its steps
    run_job_flow = json.loads(target["Input"])
    assert run_job_flow["Instances"]["KeepJobFlowAliveWhenNoSteps"] is False
    assert [s["Name"] for s in run_job_flow["Steps"]] == ["metro-compact", "metro-retention", "metro-metrics"]
    assert len(target["Input"]) <= 8192  # EventBridge Scheduler's limit on a target's input


def test_policies_grant_what_the_jobs_use() -> None:
    policy = json.loads((ROOT / "infra/emr/iam-policy.json").read_text())
    actions = {a for st in policy["Statement"] for a in st["Action"]}
    assert {"s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:DeleteObject"} <= actions
    assert {"dynamodb:Query", "sqs:SendMessage"} <= actions
    sched = json.loads((ROOT / "infra/emr/scheduler-role-policy.json").read_text())
    assert sched["Statement"][0]["Action"] == ["elasticmapreduce:RunJobFlow"]


def test_bundle_is_importable_from_the_zip(tmp_path: Path) -> None:
    z = package.build_zip(tmp_path)
    jobs = package.copy_jobs(tmp_path)
    names = zipfile.ZipFile(z).namelist()
    assert "chalicelib/core/payload.py" in names and "spark_emr/compact.py" in names
    assert not [n for n in names if "__pycache__" in n]
    assert [j.name for j in jobs] == ["compact.py", "retention.py", "metrics.py", "replay.py"]
    assert package.build_zip(tmp_path / "again").read_bytes() == z.read_bytes()  # reproducible
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import spark_emr.plan, spark_emr.records, chalicelib.core.replay.archive_layout, chalicelib.store.archive; "
        "print(spark_emr.plan.__file__)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(z)], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "metro-emr.zip" in out.stdout


@pytest.mark.parametrize(
    ("master", "env", "local"),
    [
        ("local[2]", {}, True),
        (None, {}, True),  # Spark's default master
        (None, {"PYSPARK_SUBMIT_ARGS": "--master local[4] pyspark-shell"}, True),
        (None, {"PYSPARK_SUBMIT_ARGS": "--master yarn --deploy-mode client pyspark-shell"}, False),
        (None, {"CONTAINER_ID": "container_1_0001_01_000001"}, False),  # the driver of --deploy-mode cluster
        ("yarn", {}, False),
    ],
)
def test_executor_pythonpath_is_left_to_spark_submit_off_this_machine(
    master: str | None, env: dict[str, str], local: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spark_emr import common

    for k in ("MASTER", "PYSPARK_SUBMIT_ARGS", "CONTAINER_ID", "SPARK_YARN_STAGING_DIR"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert common.is_local(master) is local


def test_the_cluster_definition_runs_the_steps_with_the_scheduler_allowed_to_add_them(emr: Any) -> None:
    from infra.emr import cluster

    for name in cluster.FILES:  # the checked-in JSON is what the module generates
        assert (ROOT / "infra/emr" / name).read_text() == cluster.render(name)
    definition = json.loads(json.dumps(cluster.cluster_definition(code=CODE, log_uri="s3://logs/", subnet="subnet-1")))
    assert definition["ReleaseLabel"].startswith("emr-7.")  # Spark 3.5
    assert definition["BootstrapActions"][0]["ScriptBootstrapAction"]["Path"] == f"{CODE}/bootstrap.sh"
    cluster_id = emr.run_job_flow(**definition)["JobFlowId"]
    steps.submit(emr, cluster_id, steps.nightly_steps("metro-data", "metro-messages", CODE,
                                                      resources_table="metro-resources"))
    listed = {s["Name"]: s["Config"]["Args"] for s in emr.list_steps(ClusterId=cluster_id)["Steps"]}
    conf = dict(a.split("=", 1) for a in listed["metro-compact"] if a.startswith("spark.executor."))
    assert conf["spark.executor.memoryOverhead"] and conf["spark.executor.memory"]  # Arrow works off-heap
    assert "--resources-table" in listed["metro-retention"]
    trust = json.loads((ROOT / "infra/emr/trust-scheduler.json").read_text())["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"} and trust["Condition"]["StringEquals"]
