"""EMR step definitions of the spark_emr/ jobs, their submission, and the nightly schedule.

    python -m infra.emr.steps --cluster-id j-XXXX --bucket metro-data --messages-table metro-messages \
        --resources-table metro-resources --code s3://code-bucket/metro/v1 [--jobs compact,retention,metrics] [--print]

Each step is ``command-runner.jar spark-submit --deploy-mode cluster --py-files <code>/metro-emr.zip
<code>/jobs/<job>.py --bucket ... --messages-table ...`` (see infra/emr/package.py for the bundle).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NIGHTLY = ("compact", "retention", "metrics")
DEFAULT_SPARK_CONF = {
    # chalicelib targets Python 3.11; EMR 7 (Amazon Linux 2023) installs it next to its default 3.9
    # (bootstrap: infra/emr/bootstrap.sh)
    "spark.pyspark.python": "/usr/bin/python3.11",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
    "spark.yarn.maxAppAttempts": "1",  # a failed job is re-run by the next schedule, not by YARN
    # Sized for the core nodes of infra/emr/cluster.py (m7g.xlarge: 4 vCPU, 16 GiB, ~12 GiB for YARN):
    # one executor per node. The Arrow decoding, merging and Parquet writing happen in the Python
    # workers, off the JVM heap, so the overhead (what YARN grants beyond the heap) is as large as it.
    "spark.executor.cores": "4",
    "spark.executor.memory": "5g",
    "spark.executor.memoryOverhead": "5g",
    "spark.driver.memory": "4g",  # the driver holds the night's listings and plans
    "spark.driver.memoryOverhead": "1g",
    "spark.network.timeout": "600s",
}


def job_args(job: str, bucket: str, messages_table: str, extra: dict[str, Any] | None = None) -> list[str]:
    """The job's own command line (after the script)."""
    args = ["--bucket", bucket, "--messages-table", messages_table, "--json"]
    for name, value in (extra or {}).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            if value:
                args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args


def step(
    job: str,
    bucket: str,
    messages_table: str,
    code: str,
    extra: dict[str, Any] | None = None,
    action_on_failure: str = "CONTINUE",
    spark_conf: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One ``add_job_flow_steps`` step running ``spark_emr/<job>.py`` from the bundle at ``code``."""
    code = code.rstrip("/")
    submit = ["spark-submit", "--deploy-mode", "cluster", "--py-files", f"{code}/metro-emr.zip"]
    for k, v in {**DEFAULT_SPARK_CONF, **(spark_conf or {})}.items():
        submit += ["--conf", f"{k}={v}"]
    submit.append(f"{code}/jobs/{job}.py")
    return {
        "Name": f"metro-{job}",
        "ActionOnFailure": action_on_failure,
        "HadoopJarStep": {"Jar": "command-runner.jar", "Args": submit + job_args(job, bucket, messages_table, extra)},
    }


def nightly_steps(
    bucket: str,
    messages_table: str,
    code: str,
    min_age_seconds: int = 3600,
    retention_seconds: int = 7 * 86400,
    topic_retention: dict[str, int] | None = None,
    jobs: tuple[str, ...] = NIGHTLY,
    resources_table: str = "",
) -> list[dict[str, Any]]:
    """Compaction, then retention, then metrics (EMR runs a cluster's steps one after another).

    With ``resources_table`` retention keeps what each topic's and subscription's settings need."""
    extras: dict[str, dict[str, Any]] = {
        "compact": {"min_age_seconds": min_age_seconds},
        "retention": {
            **({"resources_table": resources_table} if resources_table else {}),
            "retention_seconds": retention_seconds,
            "topic_retention": [f"{t}={s}" for t, s in sorted((topic_retention or {}).items())],
        },
        "metrics": {},
    }
    return [step(job, bucket, messages_table, code, extras.get(job)) for job in jobs]


def replay_step(
    bucket: str,
    messages_table: str,
    code: str,
    topic: str,
    start: str,
    end: str,
    queue_url: str,
    filter_text: str = "",
) -> dict[str, Any]:
    extra: dict[str, Any] = {"topic": topic, "start": start, "end": end, "queue_url": queue_url}
    if filter_text:
        extra["filter"] = filter_text
    return step("replay", bucket, messages_table, code, extra)


def submit(emr: Any, cluster_id: str, steps: list[dict[str, Any]]) -> list[str]:
    """Add the steps to a running cluster; return their step ids."""
    resp = emr.add_job_flow_steps(JobFlowId=cluster_id, Steps=steps)
    return list(resp["StepIds"])


def schedule_definition(
    cluster_id: str,
    steps: list[dict[str, Any]],
    role_arn: str,
    name: str = "metro-nightly-pipeline",
    expression: str = "cron(15 2 * * ? *)",
    timezone: str = "UTC",
) -> dict[str, Any]:
    """EventBridge Scheduler ``CreateSchedule`` input: AddJobFlowSteps through the universal SDK target."""
    return {
        "Name": name,
        "ScheduleExpression": expression,
        "ScheduleExpressionTimezone": timezone,
        "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 30},
        "State": "ENABLED",
        "Description": "Metro: nightly compaction, retention and usage metrics on EMR",
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:emr:addJobFlowSteps",
            "RoleArn": role_arn,
            "Input": json.dumps({"JobFlowId": cluster_id, "Steps": steps}, sort_keys=True),
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
        },
    }


def placeholder_schedule() -> dict[str, Any]:
    """The checked-in infra/emr/nightly-schedule.json (placeholders in ${...})."""
    steps = nightly_steps(
        "${BUCKET}", "${MESSAGES_TABLE}", "s3://${CODE_BUCKET}/metro/${VERSION}", resources_table="${RESOURCES_TABLE}"
    )
    return schedule_definition("${CLUSTER_ID}", steps, "arn:aws:iam::${ACCOUNT_ID}:role/metro-scheduler-emr")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Submit the Metro Spark jobs as EMR steps.")
    p.add_argument("--cluster-id", default="")
    p.add_argument("--bucket", required=True)
    p.add_argument("--messages-table", required=True)
    p.add_argument("--resources-table", required=True, help="retention reads the topics' and subscriptions' settings")
    p.add_argument("--code", required=True, help="s3://code-bucket/prefix where package.py uploaded the bundle")
    p.add_argument("--jobs", default=",".join(NIGHTLY))
    p.add_argument("--min-age-seconds", type=int, default=3600)
    p.add_argument("--retention-seconds", type=int, default=7 * 86400)
    p.add_argument("--print", action="store_true", help="print the steps instead of submitting them")
    args = p.parse_args(argv)
    steps = nightly_steps(
        args.bucket,
        args.messages_table,
        args.code,
        args.min_age_seconds,
        args.retention_seconds,
        jobs=tuple(j for j in args.jobs.split(",") if j),
        resources_table=args.resources_table,
    )
    if args.print or not args.cluster_id:
        print(json.dumps(steps, indent=2))
        return 0
    import boto3

    for sid in submit(boto3.client("emr"), args.cluster_id, steps):
        print(sid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
