"""The EMR cluster the nightly steps run on, and the IAM roles around it (trust and permissions).

    python -m infra.emr.cluster [--write]   # print (or write) the checked-in JSON definitions

``cluster_definition`` is the ``RunJobFlow`` input of the long-running cluster the nightly schedule adds
its steps to (infra/emr/nightly-schedule.json): EMR 7 (Spark 3.5, Amazon Linux 2023), one primary and
two core Graviton nodes, the bootstrap action that installs Python 3.11 and the jobs' packages, logs
in S3. Values in ``${...}`` are filled in per deployment (account, region, buckets, subnet). The trust
policies let EMR, its EC2 instances and EventBridge Scheduler (for this account's schedule only)
assume their roles; the permissions are iam-policy.json (instances) and scheduler-role-policy.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RELEASE = "emr-7.5.0"  # Spark 3.5.2
FILES = {
    "cluster.json": "cluster_definition",
    "trust-emr-service.json": "emr_service_trust",
    "trust-emr-ec2.json": "emr_ec2_trust",
    "trust-scheduler.json": "scheduler_trust",
}


def cluster_definition(
    code: str = "s3://${CODE_BUCKET}/metro/${VERSION}",
    log_uri: str = "s3://${CODE_BUCKET}/emr-logs/",
    subnet: str = "${SUBNET_ID}",
    core_nodes: int = 2,
) -> dict[str, Any]:
    """``RunJobFlow`` input (boto3 ``emr.run_job_flow(**definition)``)."""
    return {
        "Name": "metro-nightly",
        "ReleaseLabel": RELEASE,
        "Applications": [{"Name": "Spark"}],
        "LogUri": log_uri,
        "Instances": {
            "InstanceGroups": [
                {"Name": "primary", "InstanceRole": "MASTER", "InstanceType": "m7g.xlarge", "InstanceCount": 1},
                {"Name": "core", "InstanceRole": "CORE", "InstanceType": "m7g.xlarge", "InstanceCount": core_nodes},
            ],
            "Ec2SubnetId": subnet,
            "KeepJobFlowAliveWhenNoSteps": True,
            "TerminationProtected": False,
        },
        "BootstrapActions": [
            {"Name": "python3.11-and-pyarrow", "ScriptBootstrapAction": {"Path": f"{code}/bootstrap.sh"}},
        ],
        "Configurations": [
            # the jobs' executors take the whole node (infra/emr/steps.py sizes them)
            {"Classification": "spark", "Properties": {"maximizeResourceAllocation": "false"}},
            {"Classification": "spark-defaults", "Properties": {"spark.dynamicAllocation.enabled": "true"}},
        ],
        "JobFlowRole": "metro-emr-ec2",  # instance profile with infra/emr/iam-policy.json, trust-emr-ec2.json
        "ServiceRole": "metro-emr-service",  # trust-emr-service.json + AmazonEMRServicePolicy_v2
        "VisibleToAllUsers": True,
        "Tags": [{"Key": "app", "Value": "metro"}],
    }


def _trust(service: str, conditions: dict[str, Any] | None = None) -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    if conditions:
        statement["Condition"] = conditions
    return {"Version": "2012-10-17", "Statement": [statement]}


def emr_service_trust() -> dict[str, Any]:
    return _trust("elasticmapreduce.amazonaws.com", {"StringEquals": {"aws:SourceAccount": "${ACCOUNT_ID}"}})


def emr_ec2_trust() -> dict[str, Any]:
    return _trust("ec2.amazonaws.com")


def scheduler_trust() -> dict[str, Any]:
    """EventBridge Scheduler assumes the role of scheduler-role-policy.json only for this account's schedule."""
    return _trust("scheduler.amazonaws.com", {
        "StringEquals": {"aws:SourceAccount": "${ACCOUNT_ID}"},
        "ArnLike": {"aws:SourceArn": "arn:aws:scheduler:${REGION}:${ACCOUNT_ID}:schedule/default/"
                                     "metro-nightly-pipeline"},
    })


def render(name: str) -> str:
    return json.dumps(globals()[FILES[name]](), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Print or write the EMR cluster and trust policy definitions.")
    p.add_argument("--write", action="store_true")
    args = p.parse_args(argv)
    for name in FILES:
        if args.write:
            (HERE / name).write_text(render(name))
        else:
            print(f"--- {name}\n{render(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
