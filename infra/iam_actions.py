"""What IAM authorizes for one recorded AWS call (chalicelib/store/call_record.py): its action(s), resource ARN(s)
and condition keys, on the deployed stage's names.

The test run's calls name the local stack's resources; :class:`Names` maps them onto the stage's by role:

* a table named as ``Config()``'s resources, messages or leases table, or ending ``-resources``, ``-messages``,
  ``-leases``: that table of the stage (``metro-<stage>-resources``, ...);
* a bucket whose name says ``export`` (the tests' export subscriptions' buckets, docs/export.md):
  ``metro-<stage>-export-<name>``, which the stage's ``METRO_EXPORT_BUCKETS`` pattern covers; any other bucket
  (Metro has one): the stage's bucket, ``metro-<stage>-<account>-<region>``;
* a role (an export's serviceAccountEmail mapped by ``METRO_EXPORT_ROLES``): ``role/metro-<stage>-export-<name>``;
* a queue ``<METRO_QUEUE_PREFIX>-<rest>`` (a subscription queue, the health probe's): ``metro-<stage>-<rest>``;
* a function ending ``push``, ``seek_worker``, ``transform`` or ``export`` (``METRO_PUSH_FUNCTION``,
  ``METRO_SEEK_FUNCTION``, ``METRO_TRANSFORM_FUNCTION``, ``METRO_EXPORT_FUNCTION``, a test's own): that function of
  the stage;
* an SSM parameter ``/<any path>/<name>``: ``/metro-<stage>/<name>`` (``METRO_SECRETS_SSM_PATH``);
* any stream (the messages table's is Metro's only one): ``table/metro-<stage>-messages/stream/...``.

Anything else keeps its name (and then matches no grant: a violation). Object keys arrive reduced to their first
path segment (``raw/``); the ARN asked for is that segment and a placeholder (``bucket/raw/...``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chalicelib.config import Config
from infra.names import StageNames, resolve

ACCOUNT, REGION, PARTITION = "123456789012", "us-east-1", "aws"
# Actions AWS defines without a resource type: a grant on anything but "*" cannot allow them.
RESOURCELESS = frozenset({
    "lambda:listeventsourcemappings", "lambda:createeventsourcemapping", "cloudwatch:getmetricstatistics",
    "cloudwatch:putmetricdata", "cloudwatch:listmetrics", "xray:puttracesegments", "xray:puttelemetryrecords",
    "sqs:listqueues", "s3:listallmybuckets", "dynamodb:liststreams",
})
PLACEHOLDER = "..."  # stands for the rest of an object key (the recorder keeps its first segment only)
# Errors that mean "no such object": on AWS only with s3:ListBucket, else the caller sees 403 AccessDenied.
MISSING_OBJECT = frozenset({"NoSuchKey", "404"})
_SUFFIXES = {"-resources": "resources_table", "-messages": "messages_table", "-leases": "leases_table"}


class Unmapped(Exception):
    """A (service, operation) this module does not know the IAM of."""


@dataclass(frozen=True)
class Request:
    """One authorization: an action on a resource, with the condition keys the request carries."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()
    why: str = ""  # what asks for it, when it is not the call's own action (e.g. a 404's implied ListBucket)

    def key(self, name: str) -> str | None:
        return dict((k.lower(), v) for k, v in self.context).get(name.lower())


@dataclass(frozen=True)
class Names:
    """The stage's names (resolved) and the local names the test run used."""

    stage: StageNames = field(default_factory=lambda: StageNames("dev"))
    local: Config = field(default_factory=Config)
    account: str = ACCOUNT
    region: str = REGION
    partition: str = PARTITION

    def sub(self, text: str) -> str:
        return resolve(text, self.account, self.region, self.partition)

    def arn(self, service: str, rest: str, regional: bool = True) -> str:
        where = f"{self.region}:{self.account}" if regional else ":"
        return f"arn:{self.partition}:{service}:{where}:{rest}"

    def table(self, name: str) -> str:
        local = {self.local.resources_table: "resources_table", self.local.messages_table: "messages_table",
                 self.local.leases_table: "leases_table"}
        role = local.get(name) or next((r for s, r in _SUFFIXES.items() if name.endswith(s)), None)
        return str(getattr(self.stage, role)) if role else name

    def table_arn(self, name: str, index: str = "") -> str:
        return self.arn("dynamodb", f"table/{self.table(name)}" + (f"/index/{index}" if index else ""))

    @property
    def bucket(self) -> str:
        return self.sub(self.stage.bucket)

    def bucket_of(self, name: str) -> str:
        """The stage's bucket for Metro's own; an export bucket of the stage's pattern for any other."""
        if "import" in name:  # an import topic's bucket (docs/import.md)
            return self.stage.imports.replace("*", name)
        if "export" not in name or name == self.local.bucket:
            return self.bucket
        return self.stage.export_buckets.replace("*", name)

    def object_arn(self, segment: str, bucket: str = "") -> str:
        return f"arn:{self.partition}:s3:::{self.bucket_of(bucket)}/{segment}{PLACEHOLDER}"

    def bucket_arn(self, bucket: str = "") -> str:
        return f"arn:{self.partition}:s3:::{self.bucket_of(bucket)}"

    def role_arn(self, arn: str) -> str:
        leaf = arn.rsplit("/", 1)[-1]
        pattern = self.stage.imports if "import" in leaf else self.stage.export_roles
        return f"arn:{self.partition}:iam::{self.account}:role/{pattern.replace('*', leaf)}"

    def kinesis_arn(self, name_or_arn: str) -> str:
        """An import topic's stream (or its consumer, ``stream/NAME/consumer/C:T``) of the stage's pattern."""
        rest = name_or_arn.split(":stream/", 1)[-1]
        return self.arn("kinesis", "stream/" + self.stage.imports.replace("*", rest))

    def queue_arn(self, name: str) -> str:
        head = self.local.queue_prefix + "-"
        mapped = self.stage.queue_prefix + "-" + name[len(head):] if name.startswith(head) else name
        return self.arn("sqs", mapped)

    def function(self, name: str) -> str:
        short = name.rsplit(":", 1)[-1]
        for role in ("seek_worker", "push", "transform", "export", "ingest"):
            if short.endswith(role):
                return self.stage.function(role)
        return short

    def function_arn(self, name: str) -> str:
        return self.arn("lambda", f"function:{self.function(name)}")

    def parameter_arn(self, name: str) -> str:
        leaf = name.rstrip("/").rsplit("/", 1)[-1]
        return self.arn("ssm", f"parameter/{self.stage.prefix}/{leaf}")

    def stream_arn(self) -> str:
        return self.arn("dynamodb", f"table/{self.stage.messages_table}/stream/{PLACEHOLDER}")


Call = Mapping[str, Any]  # one recorded line: function, service, operation, params, outcome
Mapper = Callable[[Call, Names], list[Request]]

_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem",
             "Get": "GetItem"}


def _dynamodb(call: Call, n: Names) -> list[Request]:
    op, p = call["operation"], call["params"]
    if "Items" in p:  # TransactWriteItems / TransactGetItems: one authorization per item kind and table
        return [Request(f"dynamodb:{_TRANSACT[kind]}", n.table_arn(table), why=op) for kind, table in p["Items"]]
    if "Tables" in p:
        return [Request(f"dynamodb:{op}", n.table_arn(t)) for t in p["Tables"]]
    if op in ("ListTables", "DescribeLimits"):
        return [Request(f"dynamodb:{op}", "*")]
    return [Request(f"dynamodb:{op}", n.table_arn(p.get("TableName", ""), p.get("IndexName", "")))]


def _streams(call: Call, n: Names) -> list[Request]:
    action = f"dynamodb:{call['operation']}"
    return [Request(action, "*" if action.lower() in RESOURCELESS else n.stream_arn())]


_S3_ACTIONS = {"GetObject": "s3:GetObject", "HeadObject": "s3:GetObject", "PutObject": "s3:PutObject",
               "DeleteObject": "s3:DeleteObject", "DeleteObjects": "s3:DeleteObject",
               "ListObjectsV2": "s3:ListBucket", "ListObjects": "s3:ListBucket", "HeadBucket": "s3:ListBucket",
               "CreateBucket": "s3:CreateBucket", "PutBucketEncryption": "s3:PutEncryptionConfiguration",
               "PutBucketLifecycleConfiguration": "s3:PutLifecycleConfiguration",
               "GetBucketLocation": "s3:GetBucketLocation", "ListBuckets": "s3:ListAllMyBuckets"}


def _s3(call: Call, n: Names) -> list[Request]:
    op, p = call["operation"], call["params"]
    action = _S3_ACTIONS.get(op)
    if action is None:
        raise Unmapped(f"s3 {op}")
    if op == "ListBuckets":
        return [Request(action, "*")]
    if action in ("s3:ListBucket", "s3:CreateBucket") or op.startswith("PutBucket") or op == "GetBucketLocation":
        context = (("s3:prefix", p["Prefix"]),) if "Prefix" in p else ()
        return [Request(action, n.bucket_arn(p.get("Bucket", "")), context)]
    keys = p.get("Keys") if op == "DeleteObjects" else [p.get("Key", "")]
    out = [Request(action, n.object_arn(k, p.get("Bucket", ""))) for k in keys or [""]]
    if op in ("GetObject", "HeadObject") and call.get("outcome") in MISSING_OBJECT:
        out.append(Request("s3:ListBucket", n.bucket_arn(p.get("Bucket", "")),
                           (("s3:prefix", p.get("Key", "") + PLACEHOLDER),),
                           why=f"{op} answered {call['outcome']}: S3 says 404 only to a caller allowed to list"))
    return out


_SQS_BATCH = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage",
              "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}


def _sqs(call: Call, n: Names) -> list[Request]:
    op = str(call["operation"])
    action = "sqs:" + _SQS_BATCH.get(op, op)
    if action.lower() in RESOURCELESS:
        return [Request(action, "*")]
    return [Request(action, n.queue_arn(call["params"].get("Queue", "")))]


def _lambda(call: Call, n: Names) -> list[Request]:
    op, p = call["operation"], call["params"]
    push = (("lambda:FunctionArn", n.function_arn(p.get("FunctionName", "push"))),)
    if op == "Invoke":
        return [Request("lambda:InvokeFunction", n.function_arn(p.get("FunctionName", "")))]
    if op == "CreateEventSourceMapping":
        return [Request("lambda:CreateEventSourceMapping", "*", push)]
    if op == "ListEventSourceMappings":
        return [Request("lambda:ListEventSourceMappings", "*")]
    if op in ("GetEventSourceMapping", "UpdateEventSourceMapping", "DeleteEventSourceMapping"):
        # Metro only touches the mappings it found by the push function's name (store/mappings.py): that ARN is
        # the request's lambda:FunctionArn (Get carries no condition key)
        mapping = n.arn("lambda", f"event-source-mapping:{p.get('UUID', '')}")
        return [Request(f"lambda:{op}", mapping, () if op == "GetEventSourceMapping" else push)]
    if "FunctionName" in p:
        return [Request(f"lambda:{op}", n.function_arn(p["FunctionName"]))]
    raise Unmapped(f"lambda {op}")


def _ssm(call: Call, n: Names) -> list[Request]:
    op, p = call["operation"], call["params"]
    names = p.get("Names") or [p.get("Name") or p.get("Path", "")]
    return [Request(f"ssm:{op}", n.parameter_arn(name)) for name in names]


def _kinesis(call: Call, n: Names) -> list[Request]:
    """Import topics' streams: named by StreamName, StreamARN or ConsumerARN (iterators are the stream's)."""
    op, p = call["operation"], call["params"]
    target = p.get("ConsumerARN") or p.get("StreamARN") or p.get("StreamName")
    if not target:
        raise Unmapped(f"kinesis {op}")
    return [Request(f"kinesis:{op}", n.kinesis_arn(str(target)))]


def _sts(call: Call, n: Names) -> list[Request]:
    if call["operation"] != "AssumeRole":
        raise Unmapped(f"sts {call['operation']}")
    return [Request("sts:AssumeRole", n.role_arn(call["params"].get("RoleArn", "")))]


def _cloudwatch(call: Call, n: Names) -> list[Request]:
    action = f"cloudwatch:{call['operation']}"
    if action.lower() not in RESOURCELESS:
        raise Unmapped(f"cloudwatch {call['operation']}")
    return [Request(action, "*")]


MAPPERS: dict[str, Mapper] = {"dynamodb": _dynamodb, "dynamodb-streams": _streams, "s3": _s3, "sqs": _sqs,
                              "lambda": _lambda, "ssm": _ssm, "cloudwatch": _cloudwatch, "sts": _sts,
                              "kinesis": _kinesis}


def requests(call: Call, names: Names) -> list[Request]:
    """The authorizations the call needed on the stage (raises Unmapped for a service this module lacks)."""
    mapper = MAPPERS.get(call["service"])
    if mapper is None:
        raise Unmapped(f"{call['service']} {call['operation']}")
    return mapper(call, names)
