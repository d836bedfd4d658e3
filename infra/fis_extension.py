"""The AWS FIS extension for Lambda on the functions FIS experiments target (docs/fault-injection.md).

FIS's ``aws:lambda:*`` actions do not touch a function: an AWS-managed extension inside it reads the running
experiment's faults from S3 and fails or delays invocations. A stage deployed with ``--fis-extension`` gets, on
each function the experiment templates target (infra/fis.py):

- the extension's layer, by the public SSM parameter AWS keeps its current ARN in (resolved when CloudFormation
  deploys, so a new extension version arrives with the next deploy);
- ``AWS_LAMBDA_EXEC_WRAPPER`` (the extension starts the runtime), ``AWS_FIS_CONFIGURATION_LOCATION`` (the stage
  bucket's ``fis/`` prefix, which the FIS role writes) and ``AWS_FIS_POLL_MAX_WAIT_MILLISECONDS`` (how long the
  extension waits for the current faults before an invocation: the guide's advice for ``preventExecution``);
- read access to that prefix on the function's own role, granted here rather than in infra/policies.py, since
  the extension, not Metro's code, makes those calls (and only on stages that opt in).

Without the option nothing changes: no layer, no variable, no permission.
"""

from __future__ import annotations

from typing import Any

from infra import fis, fis_iam
from infra.names import StageNames

LAYER_PARAMETER = "/aws/service/fis/lambda-extension/AWS-FIS-extension-x86_64/1.x.x"  # Metro's functions: x86_64
LAYER = "{{resolve:ssm:" + LAYER_PARAMETER + "}}"
WRAPPER = "/opt/aws-fis/bootstrap"
POLL_MAX_WAIT_MILLISECONDS = "2000"
TARGETED = tuple(sorted(set(fis.FAILING) | set(fis.PAUSED)))  # the functions the Lambda experiments target
SID = "FisExtensionConfiguration"


def variables(names: StageNames) -> dict[str, Any]:
    return {"AWS_LAMBDA_EXEC_WRAPPER": WRAPPER,
            "AWS_FIS_CONFIGURATION_LOCATION": {"Fn::Sub": fis_iam.config_location(names)},
            "AWS_FIS_POLL_MAX_WAIT_MILLISECONDS": POLL_MAX_WAIT_MILLISECONDS}


def read_statements(names: StageNames) -> list[dict[str, Any]]:
    """What the extension reads: the objects under ``fis/``, and the listing of that prefix only."""
    bucket = f"{fis_iam.ARN}:s3:::{names.bucket}"
    return [
        {"Sid": SID, "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": [{"Fn::Sub": fis_iam.config_location(names) + "*"}]},
        {"Sid": f"{SID}List", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [{"Fn::Sub": bucket}],
         "Condition": {"StringLike": {"s3:prefix": [fis_iam.CONFIG_PREFIX + "*"]}}},
    ]


def add(resources: dict[str, Any], names: StageNames, function_ids: dict[str, str]) -> None:
    """Put the extension on the targeted functions of an app template (``function_ids``: Chalice name -> logical
    id); the read access goes to the role each function names (Chalice gives each its own)."""
    for function in TARGETED:
        props = resources[function_ids[function]]["Properties"]
        props["Layers"] = [*props.get("Layers", []), LAYER]
        props.setdefault("Environment", {}).setdefault("Variables", {}).update(variables(names))
        role_id = props["Role"]["Fn::GetAtt"][0]
        policy = resources[role_id]["Properties"]["Policies"][0]["PolicyDocument"]
        policy["Statement"].extend(read_statements(names))
