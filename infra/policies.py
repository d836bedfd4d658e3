"""Per-function IAM policies of the Chalice app, one file per stage and function under .chalice/.

    python -m infra.policies          # rewrite .chalice/policy-<stage>-<function>.json
    python -m infra.policies --check  # exit 1 when a file differs from what this module generates

Each function gets what its handlers call and nothing more: named actions (no wildcards) on the
stage's own tables, bucket prefixes, queues and log groups. ARNs carry ``${AWS::Partition}``,
``${AWS::Region}`` and ``${AWS::AccountId}`` inside ``Fn::Sub``: ``chalice package`` copies the
documents into the template and CloudFormation resolves them. Two Lambda actions have no resource
type (``ListEventSourceMappings``) or none at creation (``CreateEventSourceMapping``): they are granted on
``*``, the latter only with the condition that the mapping feeds the stage's push function. So is
``cloudwatch:GetMetricStatistics`` (the API's read of a queue's oldest message age), which has none either.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infra.names import FUNCTIONS, StageNames

CHALICE_DIR = Path(__file__).resolve().parents[1] / ".chalice"
STAGES = ("dev", "prod")
# Actions AWS defines without a resource type: they can only be granted on "*".
RESOURCELESS_ACTIONS = frozenset({"lambda:ListEventSourceMappings", "lambda:CreateEventSourceMapping",
                                  "cloudwatch:GetMetricStatistics"})

Statement = dict[str, Any]

ITEM_READ = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"]
ITEM_WRITE = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"]
QUEUE_DATA = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
              "sqs:GetQueueAttributes", "sqs:GetQueueUrl"]
QUEUE_ADMIN = ["sqs:CreateQueue", "sqs:DeleteQueue", "sqs:SetQueueAttributes", "sqs:PurgeQueue"]
MAPPINGS = ["lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping", "lambda:DeleteEventSourceMapping"]


def _arn(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}


def _allow(sid: str, actions: list[str], resources: list[Any], condition: dict[str, Any] | None = None) -> Statement:
    st: Statement = {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": resources}
    if condition:
        st["Condition"] = condition
    return st


def _table(names: StageNames, table: str) -> dict[str, str]:
    return _arn(f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{table}")


def _objects(names: StageNames, *prefixes: str) -> list[Any]:
    return [_arn(f"arn:${{AWS::Partition}}:s3:::{names.bucket}/{p}*") for p in prefixes]


def _logs(names: StageNames, function: str) -> Statement:
    group = f"arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:/aws/lambda/" \
            f"{names.function(function)}"
    return _allow("Logs", ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                  [_arn(group), _arn(group + ":*")])


def _queues(names: StageNames, actions: list[str]) -> Statement:
    sid = "SubscriptionQueues" + ("Admin" if "sqs:CreateQueue" in actions else "")
    return _allow(sid, actions, [_arn(f"arn:${{AWS::Partition}}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:"
                                      f"{names.queue_prefix}-*")])


def _push_mappings(names: StageNames) -> list[Statement]:
    push = _arn("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + names.function("push"))
    return [
        _allow("PushMappingsCreate", ["lambda:CreateEventSourceMapping"], ["*"],
               {"StringEquals": {"lambda:FunctionArn": push}}),
        _allow("PushMappingsList", ["lambda:ListEventSourceMappings"], ["*"]),
        _allow("PushMappings", MAPPINGS,
               [_arn("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:event-source-mapping:*")],
               {"StringEquals": {"lambda:FunctionArn": push}}),
    ]


def _invoke_seek_worker(names: StageNames) -> Statement:
    """The seek call, the worker itself and maintenance start the next chunk of a background seek."""
    worker = names.function("seek_worker")
    return _allow("SeekWorkerInvoke", ["lambda:InvokeFunction"], [_arn(
        "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + worker)])


def statements(names: StageNames, function: str) -> list[Statement]:
    """The statements of one function's policy."""
    res, msg, lease = (_table(names, t) for t in names.tables)
    stream = _arn(f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/"
                  f"{names.messages_table}/stream/*")
    out = [_logs(names, function), _allow("StageSecrets", ["ssm:GetParameters"], [_arn(
        f"arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter/{names.prefix}/*")])]
    if function == "api_handler":  # every API call: admin, publish, pull, ack, seek, push configuration
        out += [
            _allow("Tables", ITEM_READ + ITEM_WRITE, [res, msg, lease]),
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _allow("Archive", ["s3:GetObject"], _objects(names, "archive/")),
            _allow("SnapshotBacklogs", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                   _objects(names, "snapshots/")),
            _queues(names, QUEUE_DATA),
            _queues(names, QUEUE_ADMIN),
            *_push_mappings(names),
            _invoke_seek_worker(names),
            # :metrics reads a queue's oldest message age (AWS/SQS); CloudWatch reads have no resource type
            _allow("QueueAge", ["cloudwatch:GetMetricStatistics"], ["*"]),
        ]
    elif function == "fanout":  # the messages table's stream -> the subscriptions' queues
        out += [
            _allow("MessagesStream", ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
                                      "dynamodb:ListStreams"], [stream]),
            _allow("Subscriptions", ITEM_READ, [res, msg]),
            _allow("Leases", ITEM_READ + ITEM_WRITE, [lease]),
            _allow("Bodies", ["s3:GetObject"], _objects(names, "raw/", "archive/")),
            _queues(names, ["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"]),
        ]
    elif function == "push":  # the queues' mappings -> push endpoints; dead-lettering publishes
        out += [
            _allow("Tables", ITEM_READ + ITEM_WRITE, [res, msg, lease]),
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _allow("Archive", ["s3:GetObject"], _objects(names, "archive/")),
            _queues(names, QUEUE_DATA),
        ]
    elif function == "maintenance":  # expiry of idle subscriptions, queue and mapping repair, retries
        out += [
            _allow("Tables", ITEM_READ + ITEM_WRITE, [res, msg, lease]),
            _allow("SubscriptionScan", ["dynamodb:Scan"], [res]),
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _allow("Archive", ["s3:GetObject"], _objects(names, "archive/")),
            _queues(names, QUEUE_DATA),
            _queues(names, QUEUE_ADMIN),
            *_push_mappings(names),
            _invoke_seek_worker(names),
        ]
    elif function == "seek_worker":  # a background seek's chunks: the log -> the new queue generation, the swap
        out += [
            _allow("Tables", ITEM_READ + ITEM_WRITE, [res, msg, lease]),
            _allow("Bodies", ["s3:GetObject"], _objects(names, "raw/", "archive/", "snapshots/")),
            _queues(names, QUEUE_DATA),
            _queues(names, QUEUE_ADMIN),
            *_push_mappings(names),
            _invoke_seek_worker(names),
        ]
    else:
        raise ValueError(f"unknown function {function!r}")
    return out


# The gRPC edge's task (infra/grpc_stack.py) serves the API's calls over gRPC with the API function's grants, less
# its log group (the task's logs go through the task's execution role) and the CloudWatch read of ``:metrics``, which
# no gRPC method reaches.
GRPC_EDGE_LEAVES_OUT = frozenset({"Logs", "QueueAge"})


def grpc_edge_statements(names: StageNames) -> list[Statement]:
    """The statements of the gRPC edge task's role: a subset of the API function's."""
    return [st for st in statements(names, "api_handler") if st["Sid"] not in GRPC_EDGE_LEAVES_OUT]


def policy(stage: str, function: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": statements(StageNames(stage), function)}


def policy_file(stage: str, function: str) -> str:
    """The file name, relative to .chalice/ (what config.json's ``iam_policy_file`` says)."""
    return f"policy-{stage}-{function}.json"


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write (or --check) the per-function IAM policies under .chalice/.")
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    stale = []
    for stage in STAGES:
        for function in FUNCTIONS:
            path = CHALICE_DIR / policy_file(stage, function)
            text = render(policy(stage, function))
            if args.check:
                if not path.exists() or path.read_text() != text:
                    stale.append(path.name)
            else:
                path.write_text(text)
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
