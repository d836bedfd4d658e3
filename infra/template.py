"""The app template: what ``chalice package`` generates, merged with what Chalice cannot express.

Pure (no AWS calls): :func:`merge` takes the SAM template Chalice wrote and returns the one the
deploy command hands to CloudFormation:

* every function gets its stage name (``metro-<stage>[-name]``, what the policies and
  ``METRO_PUSH_FUNCTION`` name) and its code from the uploaded bundle;
* the stage's resource names and request limit in every function's environment, through ``Fn::Sub``
  where they name the account and region (the bucket);
* the fan-out stream trigger Chalice declares (a SAM event on a placeholder stream) becomes an
  ``AWS::Lambda::EventSourceMapping`` on the storage stack's exported stream ARN with partial batch
  failure reports, bisection on error, a parallelization factor, and an on-failure destination: an
  SQS queue (the records a batch could not fan out, kept 14 days) with an alarm on its depth;
* the push function's token issuer (``METRO_PUBLIC_URL``): the stage's API Gateway URL, whose
  ``/v1/jwks`` serves the keys (the API function cannot name its own REST API: that API refers to it);
* the fan-out function's asynchronous invocations of itself, one per slice of a wide topic
  (infra/fanout_slices.py);
* reserved concurrency for the functions asked for;
* the pyarrow layer (infra/layer.py) on every function but the transform function: each may read a compacted body
  from the archive; the transform function gets the JavaScript layer (infra/v8_layer.py) instead;
* the front door (docs/decisions/front-door.md): an API Gateway HTTP API per dialect by default
  (infra/http_api.py), or, with ``front_door="rest"``, Chalice's REST API and a second one whose stage says
  ``dialect=ams`` (infra/ams_stage.py); the same handler behind both dialects either way.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from chalicelib.store.log import UNFANNED_SHARD
from infra import fanout_slices, fis_extension, http_api, lambda_runtime, observability
from infra.ams_stage import add_ams_api, add_ams_domain
from infra.names import StageNames

# Chalice's logical ids of the functions, by Chalice function name
FUNCTION_IDS = {"api_handler": "APIHandler", "fanout": "Fanout", "push": "Push", "maintenance": "Maintenance",
                "seek_worker": "SeekWorker", "transform": "Transform", "export": "Export", "ingest": "Ingest"}
FANOUT_EVENT = "FanoutDynamodbEventSource"
DLQ_ID, ALARM_ID, MAPPING_ID = "FanoutFailures", "FanoutFailuresAlarm", "FanoutStreamMapping"
LAYER_ID = "PyarrowLayer"
V8_LAYER_ID = "JavaScriptLayer"
# The functions without the pyarrow layer: the transform function reads no archive, and carries V8 instead
# (infra/v8_layer.py)
WITHOUT_PYARROW = frozenset({"transform"})
# The stream records fan-out works on: new log items that publish did not fan out itself (chalicelib/store/log.py
# marks them). TTL deletes, the handler's own marking (MODIFY) and directly fanned items never invoke it.
FANOUT_RECORDS = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {UNFANNED_SHARD: {"S": [{"exists": True}]}}}}
FOURTEEN_DAYS = 14 * 86400
FRONT_DOORS = ("http", "rest")

Template = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """The deploy's choices for the app stack."""

    stage: str
    code_bucket: str  # where the deploy uploaded the bundle
    code_key: str
    parallelization_factor: int = 4  # concurrent batches per stream shard (1-10)
    maximum_retry_attempts: int = 100  # per batch, bisecting on each error, before the record goes to the DLQ
    # A record older than this goes to the DLQ instead of holding its shard; what it carried is still marked
    # unfanned, and the maintenance run's catch-up fans it out (chalicelib/delivery/fanout.py).
    maximum_record_age: int = 600
    reserved_concurrency: dict[str, int] = field(default_factory=lambda: {"maintenance": 1})
    alarm_topic_arn: str = ""  # an existing SNS topic for the alarms (default: the stack's own, infra/observability.py)
    alarm_email: str = ""  # subscribed to the stack's alarm topic (it confirms by e-mail)
    log_retention_days: int = 30  # the functions' and the APIs' access log groups
    layer_key: str = ""  # the pyarrow layer's zip in code_bucket (infra/layer.py); "" = no layer
    v8_layer_key: str = ""  # the JavaScript layer's zip in code_bucket (infra/v8_layer.py); "" = no layer
    ams_domain: str = ""  # a host name for the AMS dialect (infra/ams_stage.py), with its certificate's ARN
    ams_certificate_arn: str = ""
    front_door: str = "http"  # "http": API Gateway HTTP APIs (infra/http_api.py); "rest": Chalice's REST API
    fis_extension: bool = False  # the AWS FIS extension on the functions FIS targets (infra/fis_extension.py)

    def __post_init__(self) -> None:
        if self.front_door not in FRONT_DOORS:
            raise ValueError(f"front_door must be one of {FRONT_DOORS}, not {self.front_door!r}")


def _stage_environment(props: dict[str, Any], names: StageNames) -> None:
    """The stage's resource names (infra/names.py) in the function's environment, ``Fn::Sub`` on the values
    that name the account and region (the bucket)."""
    variables = props.setdefault("Environment", {}).setdefault("Variables", {})
    variables.update(names.environment())
    for key, value in list(variables.items()):
        if isinstance(value, str) and "${AWS::" in value:
            variables[key] = {"Fn::Sub": value}


def _fanout_mapping(names: StageNames, settings: Settings, event: dict[str, Any]) -> dict[str, Any]:
    props = event.get("Properties", {})
    return {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "FunctionName": {"Ref": FUNCTION_IDS["fanout"]},
            "EventSourceArn": {"Fn::ImportValue": f"{names.storage_stack}-MessagesStreamArn"},
            "StartingPosition": props.get("StartingPosition", "TRIM_HORIZON"),
            "BatchSize": props.get("BatchSize", 100),
            "MaximumBatchingWindowInSeconds": props.get("MaximumBatchingWindowInSeconds", 0),
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": settings.maximum_retry_attempts,
            "MaximumRecordAgeInSeconds": settings.maximum_record_age,
            "ParallelizationFactor": settings.parallelization_factor,
            "FilterCriteria": {"Filters": [{"Pattern": json.dumps(FANOUT_RECORDS, sort_keys=True)}]},
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [DLQ_ID, "Arn"]}}},
        },
    }


def _retained_name(prefix: str) -> dict[str, Any]:
    """``prefix-<the stack's id>``: a resource kept when its stack is deleted needs a name the next stack does
    not reuse, or a destroy followed by a deploy fails on a name that exists. The first group of the stack id (8
    hex digits) is fixed for the stack's life and new for every stack created."""
    stack_id = {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}
    return {"Fn::Join": ["-", [prefix, {"Fn::Select": [0, {"Fn::Split": ["-", stack_id]}]}]]}


def _failure_resources(names: StageNames) -> dict[str, Any]:
    """The fan-out DLQ (its alarm, ALARM_ID, is infra/observability.py's)."""
    return {
        DLQ_ID: {
            "Type": "AWS::SQS::Queue",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {"QueueName": _retained_name(names.dlq), "MessageRetentionPeriod": FOURTEEN_DAYS,
                           "SqsManagedSseEnabled": True},
        },
    }


def _layer(name: str, description: str, bucket: str, key: str) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::LayerVersion",
        "Properties": {
            "LayerName": name,
            "Description": description,
            "Content": {"S3Bucket": bucket, "S3Key": key},
            "CompatibleRuntimes": [lambda_runtime.RUNTIME],
            "CompatibleArchitectures": ["x86_64"],
        },
    }


def _public_url(out: Template) -> Any:
    """The stage's API URL as Chalice's ``EndpointURL`` output writes it, without the trailing slash."""
    value = out["Outputs"]["EndpointURL"]["Value"]
    return {"Fn::Sub": value["Fn::Sub"].rstrip("/")} if isinstance(value, dict) and "Fn::Sub" in value else value


def _grant_dlq(role: dict[str, Any]) -> None:
    """The on-failure destination is written with the function's own role."""
    doc = role["Properties"]["Policies"][0]["PolicyDocument"]
    doc["Statement"].append({"Sid": "FanoutFailures", "Effect": "Allow", "Action": ["sqs:SendMessage"],
                             "Resource": [{"Fn::GetAtt": [DLQ_ID, "Arn"]}]})


def _front_door(out: Template, settings: Settings) -> None:
    """The APIs of both dialects in front of the API function, and the AMS custom domain if asked for."""
    if settings.front_door == "http":
        http_api.add(out, settings.stage)
        if settings.ams_domain:
            http_api.add_ams_domain(out, settings.ams_domain, settings.ams_certificate_arn)
        return
    add_ams_api(out["Resources"], out.setdefault("Outputs", {}))
    if settings.ams_domain:
        add_ams_domain(out["Resources"], out["Outputs"], settings.ams_domain, settings.ams_certificate_arn)


def merge(packaged: Template, settings: Settings) -> Template:
    """The deployable app template (``packaged`` is left unchanged)."""
    names = StageNames(settings.stage)
    out = copy.deepcopy(packaged)
    resources = out["Resources"]
    for function, logical_id in FUNCTION_IDS.items():
        props = resources[logical_id]["Properties"]
        props["FunctionName"] = names.function(function)
        props["CodeUri"] = {"Bucket": settings.code_bucket, "Key": settings.code_key}
        _stage_environment(props, names)
        if function in settings.reserved_concurrency:
            props["ReservedConcurrentExecutions"] = settings.reserved_concurrency[function]
    _front_door(out, settings)
    push_env = resources[FUNCTION_IDS["push"]]["Properties"]["Environment"]["Variables"]
    push_env.setdefault("METRO_PUBLIC_URL", _public_url(out))  # a stage's own setting (a custom domain) wins
    if settings.layer_key:
        resources[LAYER_ID] = _layer(f"{names.prefix}-pyarrow", "pyarrow for reading the Parquet archive "
                                     "(infra/layer.py)", settings.code_bucket, settings.layer_key)
        for function, logical_id in FUNCTION_IDS.items():
            if function not in WITHOUT_PYARROW:
                resources[logical_id]["Properties"]["Layers"] = [{"Ref": LAYER_ID}]
    if settings.v8_layer_key:
        resources[V8_LAYER_ID] = _layer(f"{names.prefix}-javascript", "V8 (mini-racer) for the message transforms' "
                                        "JavaScript (infra/v8_layer.py)", settings.code_bucket, settings.v8_layer_key)
        resources[FUNCTION_IDS["transform"]]["Properties"]["Layers"] = [{"Ref": V8_LAYER_ID}]
    if settings.fis_extension:
        fis_extension.add(resources, names, FUNCTION_IDS)
    fanout = resources[FUNCTION_IDS["fanout"]]["Properties"]
    event = fanout.get("Events", {}).pop(FANOUT_EVENT, {})
    if not fanout.get("Events"):
        fanout.pop("Events", None)
    resources[MAPPING_ID] = _fanout_mapping(names, settings, event)
    resources.update(_failure_resources(names))
    _grant_dlq(resources["FanoutRole"])
    fanout_slices.add(resources, names, FUNCTION_IDS["fanout"], DLQ_ID)
    out.setdefault("Outputs", {})["FanoutFailuresQueueUrl"] = {"Value": {"Ref": DLQ_ID}}
    observability.add(out, settings.stage, settings.alarm_topic_arn, settings.alarm_email, settings.log_retention_days)
    out["Description"] = f"Metro app, stage {settings.stage} (chalice package, merged by infra/template.py)"
    return out
