"""The alternative to EMR Serverless (infra/emr/serverless.py): a transient EMR-on-EC2 cluster per night, and the
IAM around it (trust and permissions).

    python -m infra.emr.cluster [--write]   # print (or write) the checked-in JSON definitions

``cluster_definition`` is the ``RunJobFlow`` input of a cluster that runs the nightly steps and ends
(``KeepJobFlowAliveWhenNoSteps`` false): EMR 7 (Spark 3.5, Amazon Linux 2023), one primary and two core
Graviton nodes, the bootstrap action that installs Python 3.11 with infra/emr/requirements-emr.txt, logs in
S3 under the stage's prefix, which the instance role may write. The nightly schedule (infra/emr/nightly-schedule.json,
``steps.placeholder_schedule``) starts it with EventBridge Scheduler's ``aws-sdk:emr:runJobFlow`` target, the
steps included. Every name carries the stage, so stages share an account. Values in ``${...}`` are filled in per
deployment (account, region, stage, buckets, subnet, version). The trust policies let EMR, its EC2 instances and
EventBridge Scheduler (for this stage's schedule only) assume their roles; the permissions are iam-policy.json
(instances) and scheduler-role-policy.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RELEASE = "emr-7.5.0"  # Spark 3.5.2
INSTANCE_TYPE = "m7g.xlarge"  # 4 vCPU, 16 GiB; sizing of the steps: infra/emr/steps.py
FILES = {
    "cluster.json": "placeholder_cluster",
    "iam-policy.json": "instance_policy",
    "scheduler-role-policy.json": "scheduler_policy",
    "trust-emr-service.json": "emr_service_trust",
    "trust-emr-ec2.json": "emr_ec2_trust",
    "trust-scheduler.json": "scheduler_trust",
}
PLACEHOLDER_STAGE = "${STAGE}"


@dataclass(frozen=True)
class Ec2Names:
    """The EC2 variant's names for one stage (``metro-{stage}-...``, as infra/names.py names the rest)."""

    stage: str

    @property
    def prefix(self) -> str:
        return f"metro-{self.stage}"

    @property
    def cluster(self) -> str:
        return f"{self.prefix}-nightly"

    @property
    def service_role(self) -> str:
        return f"{self.prefix}-emr-service"

    @property
    def instance_role(self) -> str:
        """The EC2 instance profile (and its role, same name)."""
        return f"{self.prefix}-emr-ec2"

    @property
    def scheduler_role(self) -> str:
        return f"{self.prefix}-emr-scheduler"

    @property
    def schedule(self) -> str:
        return f"{self.prefix}-nightly-pipeline"

    @property
    def code_prefix(self) -> str:
        """Key prefix in the code bucket: versions of the bundle below it, and the step logs."""
        return f"metro/{self.stage}"

    @property
    def log_prefix(self) -> str:
        return f"{self.code_prefix}/logs/"


def cluster_definition(
    stage: str = PLACEHOLDER_STAGE,
    code: str = "",
    log_uri: str = "",
    subnet: str = "${SUBNET_ID}",
    core_nodes: int = 2,
    steps: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``RunJobFlow`` input (boto3 ``emr.run_job_flow(**definition)``): the cluster ends once its steps are done."""
    n = Ec2Names(stage)
    code = code or f"s3://${{CODE_BUCKET}}/{n.code_prefix}/${{VERSION}}"
    log_uri = log_uri or f"s3://${{CODE_BUCKET}}/{n.log_prefix}"
    definition: dict[str, Any] = {
        "Name": n.cluster,
        "ReleaseLabel": RELEASE,
        "Applications": [{"Name": "Spark"}],
        "LogUri": log_uri,  # the instances upload the logs: iam-policy.json lets them write there
        "Instances": {
            "InstanceGroups": [
                {"Name": "primary", "InstanceRole": "MASTER", "InstanceType": INSTANCE_TYPE, "InstanceCount": 1},
                {"Name": "core", "InstanceRole": "CORE", "InstanceType": INSTANCE_TYPE, "InstanceCount": core_nodes},
            ],
            "Ec2SubnetId": subnet,
            "KeepJobFlowAliveWhenNoSteps": False,  # transient: terminates after the last step
            "TerminationProtected": False,
        },
        "BootstrapActions": [
            {"Name": "python3.11-and-requirements-emr",
             "ScriptBootstrapAction": {"Path": f"{code}/bootstrap.sh", "Args": [code]}},
        ],
        "Configurations": [
            # the steps size their executors for the core nodes (infra/emr/steps.py)
            {"Classification": "spark", "Properties": {"maximizeResourceAllocation": "false"}},
            {"Classification": "spark-defaults", "Properties": {"spark.dynamicAllocation.enabled": "true"}},
        ],
        "JobFlowRole": n.instance_role,  # instance profile with iam-policy.json, trust-emr-ec2.json
        "ServiceRole": n.service_role,  # trust-emr-service.json + AmazonEMRServicePolicy_v2
        "VisibleToAllUsers": True,
        "Tags": [{"Key": "app", "Value": "metro"}, {"Key": "stage", "Value": stage}],
    }
    if steps:
        definition["Steps"] = steps
    return definition


def placeholder_cluster() -> dict[str, Any]:
    return cluster_definition()


def instance_policy(stage: str = PLACEHOLDER_STAGE) -> dict[str, Any]:
    """The instances' permissions: the jobs' data (the stage's bucket, tables, queues), the code, the logs."""
    n = Ec2Names(stage)
    data = "arn:aws:s3:::${BUCKET}"
    code = "arn:aws:s3:::${CODE_BUCKET}"
    prefixes = ["raw/", "raw/*", "archive/", "archive/*", "metrics/", "metrics/*", "locks/*"]
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "MetroDataBucketList", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": data,
         "Condition": {"StringLike": {"s3:prefix": prefixes}}},
        {"Sid": "MetroDataReadRaw", "Effect": "Allow", "Action": ["s3:GetObject", "s3:DeleteObject"],
         "Resource": f"{data}/raw/*"},
        {"Sid": "MetroDataArchiveAndMetrics", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": [f"{data}/archive/*", f"{data}/metrics/*"]},
        {"Sid": "MetroMaintenanceLock", "Effect": "Allow",
         "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], "Resource": f"{data}/locks/*"},
        {"Sid": "MetroCodeBundle", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": f"{code}/{n.code_prefix}/*"},
        {"Sid": "MetroStepLogs", "Effect": "Allow", "Action": ["s3:PutObject"], "Resource": f"{code}/{n.log_prefix}*"},
        {"Sid": "MetroCodeBucketList", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": code,
         "Condition": {"StringLike": {"s3:prefix": [f"{n.code_prefix}/*"]}}},
        {"Sid": "MetroMessagesTableRead", "Effect": "Allow", "Action": ["dynamodb:Query", "dynamodb:BatchGetItem"],
         "Resource": f"arn:aws:dynamodb:${{REGION}}:${{ACCOUNT_ID}}:table/metro-{stage}-messages"},
        {"Sid": "MetroRetentionSettingsRead", "Effect": "Allow", "Action": ["dynamodb:Scan"],
         "Resource": f"arn:aws:dynamodb:${{REGION}}:${{ACCOUNT_ID}}:table/metro-{stage}-resources"},
        {"Sid": "MetroReplaySend", "Effect": "Allow", "Action": ["sqs:SendMessage"],
         "Resource": f"arn:aws:sqs:${{REGION}}:${{ACCOUNT_ID}}:metro-{stage}-*"},
    ]}


def scheduler_policy(stage: str = PLACEHOLDER_STAGE) -> dict[str, Any]:
    """EventBridge Scheduler's role: start the stage's transient cluster (RunJobFlow takes no resource ARN; the
    cluster's tags are required in the request instead) and hand it its two roles."""
    n = Ec2Names(stage)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "MetroNightlyCluster", "Effect": "Allow", "Action": ["elasticmapreduce:RunJobFlow"], "Resource": "*",
         "Condition": {"StringEquals": {"aws:RequestTag/app": "metro", "aws:RequestTag/stage": stage}}},
        {"Sid": "MetroNightlyClusterTags", "Effect": "Allow", "Action": ["elasticmapreduce:AddTags"], "Resource": "*",
         "Condition": {"StringEquals": {"aws:RequestTag/app": "metro", "aws:RequestTag/stage": stage}}},
        {"Sid": "MetroNightlyClusterRoles", "Effect": "Allow", "Action": ["iam:PassRole"],
         "Resource": [f"arn:aws:iam::${{ACCOUNT_ID}}:role/{n.service_role}",
                      f"arn:aws:iam::${{ACCOUNT_ID}}:role/{n.instance_role}"]},
    ]}


def _trust(service: str, conditions: dict[str, Any] | None = None) -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    if conditions:
        statement["Condition"] = conditions
    return {"Version": "2012-10-17", "Statement": [statement]}


def emr_service_trust() -> dict[str, Any]:
    return _trust("elasticmapreduce.amazonaws.com", {"StringEquals": {"aws:SourceAccount": "${ACCOUNT_ID}"}})


def emr_ec2_trust() -> dict[str, Any]:
    return _trust("ec2.amazonaws.com")


def scheduler_trust(stage: str = PLACEHOLDER_STAGE) -> dict[str, Any]:
    """EventBridge Scheduler assumes the role of scheduler-role-policy.json only for this stage's schedule."""
    return _trust("scheduler.amazonaws.com", {
        "StringEquals": {"aws:SourceAccount": "${ACCOUNT_ID}"},
        "ArnLike": {"aws:SourceArn": f"arn:aws:scheduler:${{REGION}}:${{ACCOUNT_ID}}:schedule/default/"
                                     f"{Ec2Names(stage).schedule}"},
    })


def render(name: str) -> str:
    return json.dumps(globals()[FILES[name]](), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Print or write the EMR cluster and IAM policy definitions.")
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
