"""infra/emr/cluster.py and steps.py: the EMR-on-EC2 alternative is transient, per stage, logs where its instances
may write, installs requirements-emr.txt, and its executors use every core of the core nodes."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

from infra.emr import cluster, steps

ROOT = Path(__file__).resolve().parents[2]
VCPUS = {"m7g.xlarge": 4}  # EC2's figure for the instance type of cluster.INSTANCE_TYPE


def _s3_grants(policy: dict[str, Any], action: str) -> list[str]:
    out = []
    for st in policy["Statement"]:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if action in actions:
            out += st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
    return out


def _allowed(policy: dict[str, Any], action: str, s3_uri: str) -> bool:
    arn = "arn:aws:s3:::" + s3_uri.removeprefix("s3://")
    return any(fnmatch.fnmatchcase(arn, pattern) for pattern in _s3_grants(policy, action))


def test_the_cluster_ends_after_its_steps() -> None:
    definition = cluster.cluster_definition("dev", steps=steps.nightly_steps("b", "t", "s3://c/metro/dev/v1"))
    assert definition["Instances"]["KeepJobFlowAliveWhenNoSteps"] is False
    assert [s["Name"] for s in definition["Steps"]] == ["metro-compact", "metro-retention", "metro-metrics"]
    assert all(s["ActionOnFailure"] == "CONTINUE" for s in definition["Steps"])  # retention runs if compaction fails


def test_names_carry_the_stage() -> None:
    dev, prod = cluster.cluster_definition("dev"), cluster.cluster_definition("prod")
    for key in ("Name", "JobFlowRole", "ServiceRole", "LogUri"):
        assert "dev" in dev[key] and dev[key] != prod[key]
    assert cluster.Ec2Names("dev").schedule != cluster.Ec2Names("prod").schedule
    assert "metro-dev-" in json.dumps(cluster.scheduler_trust("dev"))


def test_the_instances_may_write_the_step_logs_and_read_the_code() -> None:
    """The defect: LogUri was s3://CODE_BUCKET/emr-logs/ while the instance role could write nowhere in it."""
    for stage in ("dev", cluster.PLACEHOLDER_STAGE):
        definition = cluster.cluster_definition(stage)
        policy = cluster.instance_policy(stage)
        log = definition["LogUri"] + "j-1ABC/steps/s-1XYZ/stderr.gz"
        assert _allowed(policy, "s3:PutObject", log)
        code = definition["BootstrapActions"][0]["ScriptBootstrapAction"]["Args"][0]
        assert _allowed(policy, "s3:GetObject", code + "/requirements-emr.txt")
        assert _allowed(policy, "s3:GetObject", code + "/metro-emr.zip")
        assert not _allowed(policy, "s3:PutObject", code + "/metro-emr.zip")  # the code is read-only to the jobs
    other = cluster.cluster_definition("prod")["LogUri"] + "j-1/x"
    assert not _allowed(cluster.instance_policy("dev"), "s3:PutObject", other)  # one stage's role, one stage's logs


def test_the_checked_in_definitions_are_the_generated_ones() -> None:
    for name in cluster.FILES:
        assert (ROOT / "infra/emr" / name).read_text() == cluster.render(name)


def test_the_bootstrap_installs_requirements_emr_from_the_code_prefix() -> None:
    definition = cluster.cluster_definition("dev", code="s3://c/metro/dev/v1")
    action = definition["BootstrapActions"][0]["ScriptBootstrapAction"]
    assert action == {"Path": "s3://c/metro/dev/v1/bootstrap.sh", "Args": ["s3://c/metro/dev/v1"]}
    script = (ROOT / "infra/emr/bootstrap.sh").read_text()
    assert '"${code%/}/requirements-emr.txt"' in script and "python3.11 -m pip install" in script


def test_the_executors_use_every_core_node_vcpu_with_the_driver_beside_one() -> None:
    conf = steps.DEFAULT_SPARK_CONF
    node_mib, vcpus = steps.YARN_NODE_MIB, VCPUS[cluster.INSTANCE_TYPE]
    executor, driver = steps.container_mib(conf, "executor"), steps.container_mib(conf, "driver")
    cores = int(conf["spark.executor.cores"])
    per_node = node_mib // executor
    assert per_node * cores == vcpus  # every vCPU of a node has a task slot
    assert node_mib - per_node * executor >= driver  # the driver fits beside the executors of a node
    core_nodes = cluster.cluster_definition()["Instances"]["InstanceGroups"][1]["InstanceCount"]
    executors = sum((node_mib - (driver if node == 0 else 0)) // executor for node in range(core_nodes))
    assert executors * cores == core_nodes * vcpus
    old = {"spark.executor.memory": "5g", "spark.executor.memoryOverhead": "5g",
           "spark.driver.memory": "4g", "spark.driver.memoryOverhead": "1g"}  # the review's sizing
    old_executors = sum((node_mib - (steps.container_mib(old, "driver") if node == 0 else 0))
                        // steps.container_mib(old, "executor") for node in range(core_nodes))
    assert old_executors == 1  # half the cluster idle
