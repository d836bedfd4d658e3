"""EMR-on-EC2 step definitions of the spark_emr/ jobs, their submission, and the nightly schedule (the EC2
alternative; EMR Serverless, the default, is infra/emr/serverless.py and shares the jobs' arguments with this).

    python -m infra.emr.steps --cluster-id j-XXXX --bucket metro-dev-... --messages-table metro-dev-messages \
        --resources-table metro-dev-resources --code s3://code-bucket/metro/dev/v1 [--jobs compact,...] [--print]

Each step is ``command-runner.jar spark-submit --deploy-mode cluster --py-files <code>/metro-emr.zip
<code>/jobs/<job>.py --bucket ... --messages-table ...`` (see infra/emr/package.py for the bundle). The nightly
schedule (``placeholder_schedule``, infra/emr/nightly-schedule.json) starts a transient cluster with these steps.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NIGHTLY = ("compact", "retention", "metrics")
# The EC2 cluster of infra/emr/cluster.py. Its core nodes are m7g.xlarge: 4 vCPU and 16 GiB, of which YARN hands
# out 12,288 MiB (EMR's yarn.nodemanager.resource.memory-mb for the xlarge size). With --deploy-mode cluster the
# driver is a YARN container on a core node too, so both have to fit on one node:
#   executor: 4 cores, 3 GiB heap + 5 GiB memoryOverhead = 8,192 MiB   (one per node: all 4 vCPUs)
#   driver:   1 GiB heap + 2.5 GiB memoryOverhead         = 3,584 MiB   (beside one of them: 11,776 <= 12,288)
# -> two executors, 8 task slots on the 8 core vCPUs. The old sizing (executor 5 + 5 GiB, driver 4 + 1 GiB =
# 15,360 MiB) could not put the driver beside an executor: its node ran the driver only, and one executor
# (4 of the 8 vCPUs) did the work. The Arrow decoding, merging and Parquet writing happen in the Python workers,
# off the JVM heap, hence the large overheads; the driver's listings and plans live in its Python process, i.e.
# in its overhead too.
DEFAULT_SPARK_CONF = {
    # chalicelib targets Python 3.11; EMR 7 (Amazon Linux 2023) installs it next to its default 3.9
    # (bootstrap: infra/emr/bootstrap.sh installs infra/emr/requirements-emr.txt for it)
    "spark.pyspark.python": "/usr/bin/python3.11",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
    "spark.yarn.maxAppAttempts": "1",  # a failed job is re-run by the next schedule, not by YARN
    "spark.executor.cores": "4",
    "spark.executor.memory": "3g",
    "spark.executor.memoryOverhead": "5g",
    "spark.driver.memory": "1g",
    "spark.driver.memoryOverhead": "2560m",
    "spark.network.timeout": "600s",
}
YARN_NODE_MIB = 12288  # m7g.xlarge under EMR 7


def container_mib(conf: dict[str, str], role: str) -> int:
    """What YARN grants one ``role`` ("executor" or "driver") container of ``conf``: heap + memoryOverhead."""
    return _mib(conf[f"spark.{role}.memory"]) + _mib(conf[f"spark.{role}.memoryOverhead"])


def _mib(size: str) -> int:
    units = {"m": 1, "g": 1024}
    return int(float(size[:-1]) * units[size[-1].lower()])


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


def nightly_extras(
    min_age_seconds: int = 3600,
    retention_seconds: int = 7 * 86400,
    topic_retention: dict[str, int] | None = None,
    resources_table: str = "",
) -> dict[str, dict[str, Any]]:
    """Each nightly job's own options (after ``--bucket``, ``--messages-table``, ``--json``)."""
    return {
        "compact": {**({"resources_table": resources_table} if resources_table else {}),
                    "min_age_seconds": min_age_seconds},
        "retention": {
            **({"resources_table": resources_table} if resources_table else {}),
            "retention_seconds": retention_seconds,
            "topic_retention": [f"{t}={s}" for t, s in sorted((topic_retention or {}).items())],
        },
        "metrics": {},
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
    extras = nightly_extras(min_age_seconds, retention_seconds, topic_retention, resources_table)
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
    run_job_flow: dict[str, Any],
    role_arn: str,
    name: str,
    expression: str = "cron(15 2 * * ? *)",
    timezone: str = "UTC",
) -> dict[str, Any]:
    """EventBridge Scheduler ``CreateSchedule`` input: RunJobFlow (a transient cluster with its steps) through the
    universal SDK target. The cluster ends after its last step."""
    return {
        "Name": name,
        "ScheduleExpression": expression,
        "ScheduleExpressionTimezone": timezone,
        "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 30},
        "State": "ENABLED",
        "Description": "Metro: nightly compaction, retention and usage metrics on a transient EMR cluster",
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:emr:runJobFlow",
            "RoleArn": role_arn,
            "Input": json.dumps(run_job_flow, sort_keys=True),
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
        },
    }


def placeholder_schedule() -> dict[str, Any]:
    """The checked-in infra/emr/nightly-schedule.json (placeholders in ${...})."""
    from infra.emr import cluster

    n = cluster.Ec2Names(cluster.PLACEHOLDER_STAGE)
    code = f"s3://${{CODE_BUCKET}}/{n.code_prefix}/${{VERSION}}"
    steps = nightly_steps("${BUCKET}", "${MESSAGES_TABLE}", code, resources_table="${RESOURCES_TABLE}")
    definition = cluster.cluster_definition(code=code, steps=steps)
    return schedule_definition(definition, f"arn:aws:iam::${{ACCOUNT_ID}}:role/{n.scheduler_role}", n.schedule)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Submit the Metro Spark jobs as EMR steps (to a running cluster).")
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
