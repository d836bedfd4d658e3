"""What the stage's fault injection experiments (infra/fis.py) run with: the FIS role, the throttle's Automation
runbook and the role that runbook assumes. Pure: plain dicts, ARNs with CloudFormation's pseudo parameters
(``${AWS::Partition}``, ``${AWS::Region}``, ``${AWS::AccountId}``) that ``Fn::Sub`` or :func:`infra.names.resolve`
fill in.

The FIS role is granted, per action id the templates use, the permissions AWS's actions reference lists for that
action (:data:`PERMISSIONS`) and nothing more, each on the stage's own resources where the action has a resource
type: Metro's function ARNs, the stage bucket's ``fis/`` prefix (the Lambda extension's configuration location), the
gRPC edge's cluster, the runbook. ``tag:GetResources`` and the EC2 describes have no resource type and are granted
on ``*``, as infra/policies.py grants Lambda's and CloudWatch's resourceless reads.

Lambda has no throttle action in FIS, so the throttle experiment runs :func:`throttle_runbook` through
``aws:ssm:start-automation-execution``: it reserves no concurrency for one function (every invocation is throttled),
waits, and puts the function's reservation back. Its wait and its throttle step both go to the restore step on
failure and on cancel (an experiment stopped by its alarm cancels the automation), so a stopped experiment still
restores the reservation.
"""

from __future__ import annotations

from typing import Any

from infra.names import StageNames

Statement = dict[str, Any]
ARN = "arn:${AWS::Partition}"
REGION_ACCOUNT = "${AWS::Region}:${AWS::AccountId}"
CONFIG_PREFIX = "fis/"  # the FIS Lambda extension's configuration location, in the stage bucket
UNRESERVED = -1  # the runbook's RestoreConcurrency for a function that had no reservation

# The permissions the AWS FIS actions reference lists per action (docs/fault-injection.md cites it).
PERMISSIONS: dict[str, tuple[str, ...]] = {
    "aws:lambda:invocation-error": ("s3:PutObject", "s3:DeleteObject", "lambda:GetFunction", "tag:GetResources"),
    "aws:lambda:invocation-add-delay": ("s3:PutObject", "s3:DeleteObject", "lambda:GetFunction", "tag:GetResources"),
    "aws:ssm:start-automation-execution": ("ssm:GetAutomationExecution", "ssm:StartAutomationExecution",
                                           "ssm:StopAutomationExecution", "iam:PassRole"),
    "aws:ecs:stop-task": ("ecs:DescribeTasks", "ecs:ListTasks", "ecs:StopTask", "tag:GetResources"),
    "aws:network:disrupt-connectivity": (
        "ec2:CreateNetworkAcl", "ec2:CreateNetworkAclEntry", "ec2:CreateTags", "ec2:DeleteNetworkAcl",
        "ec2:DescribeManagedPrefixLists", "ec2:DescribeNetworkAcls", "ec2:DescribeSubnets", "ec2:DescribeVpcs",
        "ec2:GetManagedPrefixListEntries", "ec2:ReplaceNetworkAclAssociation"),
}


def fis_role_name(names: StageNames) -> str:
    return f"{names.prefix}-fis"


def automation_role_name(names: StageNames) -> str:
    return f"{names.prefix}-fis-automation"


def runbook_name(names: StageNames) -> str:
    return f"{names.prefix}-lambda-throttle"


def role_arn(name: str) -> str:
    return f"{ARN}:iam::${{AWS::AccountId}}:role/{name}"


def function_arn(names: StageNames, function: str) -> str:
    return f"{ARN}:lambda:{REGION_ACCOUNT}:function:{names.function(function)}"


def config_location(names: StageNames) -> str:
    """The S3 location the FIS Lambda extension reads (its ``AWS_FIS_CONFIGURATION_LOCATION``): a prefix of the
    stage bucket, which FIS writes the running experiment's faults to."""
    return f"{ARN}:s3:::{names.bucket}/{CONFIG_PREFIX}"


def runbook_arn(names: StageNames) -> str:
    return f"{ARN}:ssm:{REGION_ACCOUNT}:document/{runbook_name(names)}"


def cluster_arn(names: StageNames) -> str:
    return f"{ARN}:ecs:{REGION_ACCOUNT}:cluster/{names.grpc_stack}"


def _allow(sid: str, actions: list[str], resources: list[Any], condition: dict[str, Any] | None = None) -> Statement:
    st: Statement = {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": resources}
    if condition:
        st["Condition"] = condition
    return st


def _lambda_statements(names: StageNames, functions: list[str]) -> list[Statement]:
    """The Lambda actions write the faults to the extension's location and read the functions' configuration
    (to find that location)."""
    return [
        _allow("ExtensionConfiguration", ["s3:DeleteObject", "s3:PutObject"], [config_location(names) + "*"]),
        _allow("TargetFunctions", ["lambda:GetFunction"], [function_arn(names, f) for f in sorted(functions)]),
    ]


def _automation_statements(names: StageNames) -> list[Statement]:
    """Start the throttle runbook, follow and stop its executions, and hand it its role (to SSM only)."""
    return [
        _allow("StartThrottleRunbook", ["ssm:StartAutomationExecution"],
               [f"{ARN}:ssm:{REGION_ACCOUNT}:automation-definition/{runbook_name(names)}:*"]),
        _allow("FollowAutomation", ["ssm:GetAutomationExecution", "ssm:StopAutomationExecution"],
               [f"{ARN}:ssm:{REGION_ACCOUNT}:automation-execution/*"]),
        _allow("PassAutomationRole", ["iam:PassRole"], [role_arn(automation_role_name(names))],
               {"StringEquals": {"iam:PassedToService": "ssm.amazonaws.com"}}),
    ]


def _ecs_statements(names: StageNames) -> list[Statement]:
    """Stop tasks of the gRPC edge's cluster only (ListTasks is scoped by its ``ecs:cluster`` condition)."""
    return [
        _allow("EdgeTasks", ["ecs:DescribeTasks", "ecs:StopTask"],
               [f"{ARN}:ecs:{REGION_ACCOUNT}:task/{names.grpc_stack}/*"]),
        _allow("EdgeTaskList", ["ecs:ListTasks"], ["*"], {"ArnEquals": {"ecs:cluster": cluster_arn(names)}}),
    ]


def _network_statements() -> list[Statement]:
    """aws:network:disrupt-connectivity, as AWS's managed AWSFaultInjectionSimulatorNetworkAccess scopes it: FIS
    creates, fills and deletes only network ACLs tagged ``managedByFIS=true``."""
    acl = f"{ARN}:ec2:{REGION_ACCOUNT}:network-acl/*"
    vpc = f"{ARN}:ec2:{REGION_ACCOUNT}:vpc/*"
    tagged = {"StringEquals": {"aws:RequestTag/managedByFIS": "true"}}
    return [
        _allow("CreateFisAcl", ["ec2:CreateNetworkAcl"], [acl], tagged),
        _allow("CreateFisAclInVpc", ["ec2:CreateNetworkAcl"], [vpc]),
        _allow("TagFisAcl", ["ec2:CreateTags"], [acl],
               {"StringEquals": {"ec2:CreateAction": "CreateNetworkAcl", "aws:RequestTag/managedByFIS": "true"}}),
        _allow("ChangeFisAcl", ["ec2:CreateNetworkAclEntry", "ec2:DeleteNetworkAcl"], [acl, vpc],
               {"StringEquals": {"ec2:ResourceTag/managedByFIS": "true"}}),
        _allow("SwapSubnetAcl", ["ec2:ReplaceNetworkAclAssociation"],
               [f"{ARN}:ec2:{REGION_ACCOUNT}:subnet/*", acl]),
        _allow("PrefixListEntries", ["ec2:GetManagedPrefixListEntries"],
               [f"{ARN}:ec2:{REGION_ACCOUNT}:prefix-list/*"]),
        # describes have no resource type
        _allow("NetworkReads", ["ec2:DescribeManagedPrefixLists", "ec2:DescribeNetworkAcls", "ec2:DescribeSubnets",
                                "ec2:DescribeVpcs"], ["*"]),
    ]


def fis_role_statements(names: StageNames, action_ids: set[str], lambda_functions: list[str]) -> list[Statement]:
    """The FIS role's statements for experiments using ``action_ids`` (on ``lambda_functions`` for the Lambda
    actions): the actions reference's permissions for each, on the stage's resources."""
    unknown = action_ids - PERMISSIONS.keys()
    if unknown:
        raise ValueError(f"no permissions known for {sorted(unknown)}")
    out: list[Statement] = []
    if action_ids & {"aws:lambda:invocation-error", "aws:lambda:invocation-add-delay"}:
        out += _lambda_statements(names, lambda_functions)
    if "aws:ssm:start-automation-execution" in action_ids:
        out += _automation_statements(names)
    if "aws:ecs:stop-task" in action_ids:
        out += _ecs_statements(names)
    if "aws:network:disrupt-connectivity" in action_ids:
        out += _network_statements()
    if any("tag:GetResources" in PERMISSIONS[a] for a in action_ids):
        out.append(_allow("FindTargets", ["tag:GetResources"], ["*"]))  # no resource type
    return out


def _assume(service: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": "${AWS::AccountId}"}}}]}


def fis_role(names: StageNames, statements: list[Statement]) -> dict[str, Any]:
    """The IAM role FIS assumes to run the stage's experiments (an ``AWS::IAM::Role``'s properties)."""
    return {"RoleName": fis_role_name(names), "Description": f"AWS FIS experiments of Metro {names.stage}",
            "AssumeRolePolicyDocument": _assume("fis.amazonaws.com"),
            "Policies": [{"PolicyName": "experiments",
                          "PolicyDocument": {"Version": "2012-10-17", "Statement": statements}}]}


def automation_role(names: StageNames, functions: list[str]) -> dict[str, Any]:
    """The role the throttle runbook assumes: it changes the reserved concurrency of ``functions`` and nothing
    else."""
    return {"RoleName": automation_role_name(names),
            "Description": f"Metro {names.stage}: the FIS throttle runbook's concurrency changes",
            "AssumeRolePolicyDocument": _assume("ssm.amazonaws.com"),
            "Policies": [{"PolicyName": "concurrency", "PolicyDocument": {"Version": "2012-10-17", "Statement": [
                _allow("Concurrency", ["lambda:DeleteFunctionConcurrency", "lambda:PutFunctionConcurrency"],
                       [function_arn(names, f) for f in sorted(functions)])]}}]}


def _concurrency(step: str, api: str, reserved: Any, after: str | None = None) -> dict[str, Any]:
    inputs: dict[str, Any] = {"Service": "lambda", "Api": api, "FunctionName": "{{ FunctionName }}"}
    if reserved is not None:
        inputs["ReservedConcurrentExecutions"] = reserved
    out: dict[str, Any] = {"name": step, "action": "aws:executeAwsApi", "inputs": inputs}
    if after:
        out.update(onFailure="step:Restore", onCancel="step:Restore", nextStep=after)
    else:
        out["isEnd"] = True
    return out


def throttle_runbook(names: StageNames) -> dict[str, Any]:
    """The Automation runbook (schema 0.3) of the throttle experiment: reserve 0 concurrency for ``FunctionName``
    (Lambda throttles every invocation), hold for ``Duration``, then put back ``RestoreConcurrency`` (or remove the
    reservation when it is -1). Throttle and hold go to the restore on failure and on cancel."""
    return {
        "schemaVersion": "0.3",
        "description": f"Metro {names.stage}: throttle one function for a while, then restore its reservation "
                       "(docs/fault-injection.md)",
        "assumeRole": "{{ AutomationAssumeRole }}",
        "parameters": {
            "AutomationAssumeRole": {"type": "String", "description": "The role the runbook assumes"},
            "FunctionName": {"type": "String", "description": "The function to throttle"},
            "RestoreConcurrency": {"type": "Integer", "default": UNRESERVED,
                                   "description": "Its reserved concurrency before (-1: none)"},
            "Duration": {"type": "String", "default": "PT5M", "description": "How long (ISO 8601)"},
        },
        "mainSteps": [
            _concurrency("Throttle", "PutFunctionConcurrency", 0, after="Hold"),
            {"name": "Hold", "action": "aws:sleep", "inputs": {"Duration": "{{ Duration }}"},
             "onFailure": "step:Restore", "onCancel": "step:Restore", "nextStep": "Restore"},
            {"name": "Restore", "action": "aws:branch", "inputs": {
                "Choices": [{"NextStep": "RemoveReservation", "Variable": "{{ RestoreConcurrency }}",
                             "NumericEquals": UNRESERVED}],
                "Default": "PutReservationBack"}},
            _concurrency("PutReservationBack", "PutFunctionConcurrency", "{{ RestoreConcurrency }}"),
            _concurrency("RemoveReservation", "DeleteFunctionConcurrency", None),
        ],
    }
