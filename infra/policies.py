"""Per-function IAM policies of the Chalice app, one file per stage and function under .chalice/.

    python -m infra.policies          # rewrite .chalice/policy-<stage>-<function>.json
    python -m infra.policies --check  # exit 1 when a file differs from what this module generates

Each function gets what its handlers call and nothing more, by measurement: `make test` records every AWS call by
the function that makes it and infra/iam_gate.py fails on a call a policy does not allow and on a grant no call
used (the grants AWS itself uses with the role, such as the runtime's log writes, are its declared exemptions).
Named actions (no wildcards) on the stage's own tables (per table), bucket prefixes, queues and log group. ARNs
carry ``${AWS::Partition}``, ``${AWS::Region}`` and ``${AWS::AccountId}`` inside ``Fn::Sub``: ``chalice package``
copies the documents into the template and CloudFormation resolves them. The functions that read objects which
may be missing (bodies, the archive's manifests, the metrics job's summaries) may list the bucket for those
prefixes only (``s3:prefix``): without ``s3:ListBucket`` S3 answers a missing key 403, not 404. Some actions have
no resource type and are granted on ``*``: ``lambda:ListEventSourceMappings``, ``lambda:CreateEventSourceMapping``
(only with the condition that the mapping feeds the stage's push function), ``cloudwatch:GetMetricStatistics``
(the API's read of a queue's oldest message age) and ``dynamodb:ListStreams`` (fan-out's stream mapping).
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
                                  "cloudwatch:GetMetricStatistics", "dynamodb:ListStreams",
                                  "xray:PutTelemetryRecords", "xray:PutTraceSegments"})

Statement = dict[str, Any]

QUEUE_DATA = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
              "sqs:GetQueueAttributes", "sqs:GetQueueUrl"]
QUEUE_ADMIN = ["sqs:CreateQueue", "sqs:DeleteQueue", "sqs:SetQueueAttributes"]
# What each function calls, by measurement: the IAM gate of `make test` (infra/iam_gate.py) fails on a call a
# policy does not allow and on a grant no call (and no exemption of infra/iam_gate.EXEMPTIONS) used. Per table:
# (resources, messages, leases).
TABLE_ACTIONS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "api_handler": (["BatchWriteItem", "ConditionCheckItem", "DeleteItem", "GetItem", "PutItem", "Query", "UpdateItem"],
                    ["GetItem", "PutItem", "Query"],
                    ["BatchGetItem", "BatchWriteItem", "DeleteItem", "GetItem", "PutItem", "Query", "UpdateItem"]),
    "fanout": (["Query", "UpdateItem"], ["UpdateItem"], []),
    "push": (["GetItem", "PutItem", "Query", "UpdateItem"], ["PutItem"], ["BatchGetItem", "BatchWriteItem"]),
    "maintenance": (["BatchWriteItem", "DeleteItem", "GetItem", "PutItem", "Query", "Scan", "UpdateItem"],
                    ["GetItem", "PutItem", "UpdateItem"],
                    ["BatchWriteItem", "GetItem", "PutItem", "Query", "UpdateItem"]),
    "seek_worker": (["ConditionCheckItem", "GetItem", "PutItem", "UpdateItem"], ["Query"], []),
    "transform": ([], [], []),
    "export": (["GetItem", "PutItem", "Query", "UpdateItem"], ["PutItem"], ["BatchGetItem", "BatchWriteItem"]),
    "ingest": (["GetItem", "Query", "UpdateItem"], ["GetItem", "PutItem"], ["GetItem", "Query", "UpdateItem"]),
}
# The messages table's sparse index of the log items not fanned out yet (infra/resources.json), which the
# maintenance run's fan-out catch-up reads (store/log.py).
UNFANNED_INDEX = "unfanned"


def _arn(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}


def _allow(sid: str, actions: list[str], resources: list[Any], condition: dict[str, Any] | None = None) -> Statement:
    st: Statement = {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": resources}
    if condition:
        st["Condition"] = condition
    return st


def _table(names: StageNames, table: str) -> dict[str, str]:
    return _arn(f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{table}")


def _tables(names: StageNames, function: str) -> list[Statement]:
    out = []
    for sid, table, actions in zip(("ResourcesTable", "MessagesTable", "LeasesTable"), names.tables,
                                   TABLE_ACTIONS[function]):
        if actions:
            out.append(_allow(sid, [f"dynamodb:{a}" for a in actions], [_table(names, table)]))
    return out


def _objects(names: StageNames, *prefixes: str) -> list[Any]:
    return [_arn(f"arn:${{AWS::Partition}}:s3:::{names.bucket}/{p}*") for p in prefixes]


def _listing(sid: str, names: StageNames, *prefixes: str) -> Statement:
    """s3:ListBucket on the bucket, for keys under ``prefixes`` only: with it S3 answers a missing key of those
    prefixes 404 NoSuchKey, which the stores read as "missing" (store/log.py, store/archive.py, store/usage.py);
    without it S3 answers 403 AccessDenied, which they rightly treat as a misconfiguration."""
    return _allow(sid, ["s3:ListBucket"], [_arn(f"arn:${{AWS::Partition}}:s3:::{names.bucket}")],
                  {"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}})


def _logs(names: StageNames, function: str) -> list[Statement]:
    """The Lambda runtime's own writes: the streams of the function's group (``group:log-stream:S``, which
    ``group:*`` covers), and the X-Ray segments of active tracing (no resource type: ``*``). The template creates
    the group itself, with its retention (infra/observability.py), so the role may not create one."""
    group = f"arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:/aws/lambda/" \
            f"{names.function(function)}"
    return [_allow("Logs", ["logs:CreateLogStream", "logs:PutLogEvents"], [_arn(group + ":*")]),
            _allow("XRay", ["xray:PutTelemetryRecords", "xray:PutTraceSegments"], ["*"])]


def _queues(names: StageNames, actions: list[str], admin: bool = False) -> Statement:
    return _allow("SubscriptionQueues" + ("Admin" if admin else ""), actions, [_arn(
        f"arn:${{AWS::Partition}}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:{names.queue_prefix}-*")])


def _push_mappings(names: StageNames, create: bool = True, update: bool = True,
                   export: bool = False, ingest: bool = False) -> list[Statement]:
    """The push function's event source mappings: listed by queue, created (API, seek worker), updated when found
    with other settings (API, seek worker) and deleted (API, seek worker, maintenance's expiry); with ``export``,
    the export function's too (docs/export.md); with ``ingest``, the ingest function's Kinesis mappings, which the
    API creates and deletes with import topics (docs/import.md)."""
    functions = (["push", "export"] if export else ["push"]) + (["ingest"] if ingest else [])
    arns = [_arn("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + names.function(f))
            for f in functions]
    target: Any = arns if len(arns) > 1 else arns[0]
    out = [_allow("PushMappingsList", ["lambda:ListEventSourceMappings"], ["*"])]
    if create:
        out.insert(0, _allow("PushMappingsCreate", ["lambda:CreateEventSourceMapping"], ["*"],
                             {"StringEquals": {"lambda:FunctionArn": target}}))
    changes = ["lambda:DeleteEventSourceMapping"] + (["lambda:UpdateEventSourceMapping"] if update else [])
    out.append(_allow("PushMappings", changes,
                      [_arn("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:event-source-mapping:*")],
                      {"StringEquals": {"lambda:FunctionArn": target}}))
    return out


def _export_buckets(names: StageNames, actions: list[str]) -> Statement:
    """Export subscriptions' buckets (the stage's pattern, METRO_EXPORT_BUCKETS): checked by the API (HeadBucket,
    s3:ListBucket), written by the export function (s3:PutObject)."""
    objects = "/*" if actions == ["s3:PutObject"] else ""
    return _allow("ExportBuckets", actions, [_arn(f"arn:${{AWS::Partition}}:s3:::{names.export_buckets}{objects}")])


def _export_roles(names: StageNames) -> Statement:
    """The roles serviceAccountEmail maps to (METRO_EXPORT_ROLES): the API's bucket check and the writer assume them."""
    return _allow("ExportRoles", ["sts:AssumeRole"],
                  [_arn(f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/{names.export_roles}")])


def _import_streams(names: StageNames, actions: list[str], consumers: list[str] | None = None) -> list[Statement]:
    """Import topics' Kinesis streams (the stage's pattern, METRO_INGESTION_SOURCES) and, for ``consumers``, their
    enhanced fan-out consumers."""
    stream = f"arn:${{AWS::Partition}}:kinesis:${{AWS::Region}}:${{AWS::AccountId}}:stream/{names.imports}"
    out = [_allow("ImportStreams", actions, [_arn(stream)])]
    if consumers:
        out.append(_allow("ImportConsumers", consumers, [_arn(stream + "/consumer/*")]))
    return out


def _import_buckets(names: StageNames, objects: bool = False) -> list[Statement]:
    """Import topics' S3 buckets: checked by the API (HeadBucket: s3:ListBucket), listed and read (``objects``) by
    the maintenance scan."""
    out = [_allow("ImportBuckets", ["s3:ListBucket"], [_arn(f"arn:${{AWS::Partition}}:s3:::{names.imports}")])]
    if objects:
        out.append(_allow("ImportObjects", ["s3:GetObject"],
                          [_arn(f"arn:${{AWS::Partition}}:s3:::{names.imports}/*")]))
    return out


def _import_roles(names: StageNames) -> Statement:
    """The roles an import topic's awsRoleArn may name (METRO_INGESTION_ROLES): the API's checks assume them."""
    return _allow("ImportRoles", ["sts:AssumeRole"],
                  [_arn(f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/{names.imports}")])


def _invoke_seek_worker(names: StageNames) -> Statement:
    """The seek call, the worker itself and maintenance start the next chunk of a background seek."""
    worker = names.function("seek_worker")
    return _allow("SeekWorkerInvoke", ["lambda:InvokeFunction"], [_arn(
        "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + worker)])


def _invoke_transform(names: StageNames) -> Statement:
    """Publish and delivery hand messages to the one function that runs the transforms' JavaScript
    (chalicelib/store/transformer.py, infra/v8_layer.py)."""
    return _allow("TransformInvoke", ["lambda:InvokeFunction"], [_arn(
        "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + names.function("transform"))])


def _invoke_own_slices(names: StageNames) -> Statement:
    """The stream handler hands a wide topic's slices to its own function (infra/fanout_slices.py)."""
    return _allow("FanoutSlicesInvoke", ["lambda:InvokeFunction"], [_arn(
        "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + names.function("fanout"))])


def statements(names: StageNames, function: str) -> list[Statement]:
    """The statements of one function's policy."""
    if function not in TABLE_ACTIONS:
        raise ValueError(f"unknown function {function!r}")
    if function == "transform":  # users' JavaScript runs here: its role writes its logs and nothing else
        return _logs(names, function)
    stream = _arn(f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/"
                  f"{names.messages_table}/stream/*")
    out = [*_logs(names, function), _allow("StageSecrets", ["ssm:GetParameters"], [_arn(
        f"arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter/{names.prefix}/*")]),
        *_tables(names, function)]
    if function == "api_handler":  # every API call: admin, publish, pull, ack, seek, push configuration, metrics
        out += [
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _allow("Archive", ["s3:GetObject"], _objects(names, "archive/")),
            _allow("SnapshotBacklogs", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                   _objects(names, "snapshots/")),
            _listing("ListBodies", names, "raw/", "archive/"),
            # :metrics reads the metrics job's summary of the project (store/usage.py): None when it has not run
            _allow("MetricsSummaries", ["s3:GetObject"], _objects(names, "metrics/")),
            _listing("ListMetrics", names, "metrics/"),
            _queues(names, QUEUE_DATA),
            _queues(names, QUEUE_ADMIN, admin=True),
            *_push_mappings(names, export=True, ingest=True),
            _export_buckets(names, ["s3:ListBucket"]),
            _export_roles(names),
            _invoke_seek_worker(names),
            _invoke_transform(names),
            # :metrics reads a queue's oldest message age (AWS/SQS); CloudWatch reads have no resource type
            _allow("QueueAge", ["cloudwatch:GetMetricStatistics"], ["*"]),
            *_import_streams(names, ["kinesis:DescribeStreamSummary"], ["kinesis:DescribeStreamConsumer"]),
            *_import_buckets(names),
            _import_roles(names),
        ]
    elif function == "fanout":  # the messages table's stream -> the subscriptions' queues
        out += [
            _allow("MessagesStream", ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
                   [stream]),
            # Lambda's stream mapping lists the table's streams with the function's role; no resource type
            _allow("MessagesStreamList", ["dynamodb:ListStreams"], ["*"]),
            _allow("Bodies", ["s3:GetObject"], _objects(names, "raw/")),
            _queues(names, ["sqs:SendMessage"]),
            _invoke_own_slices(names),
        ]
    elif function == "push":  # the queues' mappings -> push endpoints; dead-lettering publishes
        out += [
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _allow("Archive", ["s3:GetObject"], _objects(names, "archive/")),
            _listing("ListBodies", names, "raw/", "archive/"),
            _queues(names, ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage",
                            "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]),
            _invoke_transform(names),
        ]
    elif function == "export":  # the export queues' mappings -> files in S3; dead-lettering publishes
        out += [
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _allow("Archive", ["s3:GetObject"], _objects(names, "archive/")),
            _listing("ListBodies", names, "raw/", "archive/"),
            _queues(names, ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage",
                            "sqs:ChangeMessageVisibility"]),
            _export_buckets(names, ["s3:PutObject"]),
            _export_roles(names),
            _invoke_transform(names),
        ]
    elif function == "ingest":  # Kinesis (and MSK) batches of import topics -> publish
        out += [
            # the Kinesis mapping reads with the function's role (DescribeStream*, SubscribeToShard for a consumer:
            # infra/iam_gate.py's exemptions); the local pump lists, and reads as the mapping does
            *_import_streams(names, ["kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetRecords",
                                     "kinesis:GetShardIterator", "kinesis:ListShards"], ["kinesis:SubscribeToShard"]),
            _allow("Bodies", ["s3:PutObject"], _objects(names, "raw/")),
            _queues(names, ["sqs:SendMessage"]),
            _invoke_transform(names),  # an import topic's transforms, at publish
        ]
    elif function == "maintenance":  # dead-letter sweep, fan-out catch-up, idle expiry, stalled seeks
        out += [
            _allow("UnfannedIndex", ["dynamodb:Query"], [_arn(
                f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/"
                f"{names.messages_table}/index/{UNFANNED_INDEX}")]),
            _allow("Bodies", ["s3:GetObject", "s3:PutObject"], _objects(names, "raw/")),
            _queues(names, ["sqs:SendMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteQueue"]),
            *_push_mappings(names, create=False, update=False, export=True),
            _invoke_seek_worker(names),
            *_import_buckets(names, objects=True),
        ]
    else:  # seek_worker: a background seek's chunks: the log -> the new queue generation, the swap
        out += [
            _allow("Bodies", ["s3:GetObject"], _objects(names, "raw/", "archive/", "snapshots/")),
            _listing("ListBodies", names, "raw/", "archive/"),
            _queues(names, ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:GetQueueAttributes", "sqs:DeleteQueue"]),
            # an export subscription's new queue generation: its visibility above the export function's timeout
            _queues(names, ["sqs:SetQueueAttributes"], admin=True),
            *_push_mappings(names, export=True),
            _invoke_seek_worker(names),
        ]
    return out


# The gRPC edge's task (infra/grpc_stack.py) serves the API's calls over gRPC with the API function's grants, less
# its log group (the task's logs go through the task's execution role) and the reads of ``:metrics`` (CloudWatch, the
# metrics job's summaries under ``metrics/``), which no gRPC method reaches.
GRPC_EDGE_LEAVES_OUT = frozenset({"Logs", "XRay", "QueueAge", "MetricsSummaries", "ListMetrics"})


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
