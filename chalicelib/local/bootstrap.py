"""Idempotent creation of Metro's tables and bucket from infra/resources.json (one source of truth).

The same template deploys to AWS through CloudFormation; here each declared resource becomes
the equivalent API call, so the bootstrap works against moto, LocalStack or a real account.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.store import aws

log = logging.getLogger("metro.bootstrap")
TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "resources.json"


def parameters(config: Config) -> dict[str, str]:
    return {
        "ResourcesTableName": config.resources_table,
        "MessagesTableName": config.messages_table,
        "LeasesTableName": config.leases_table,
        "BucketName": config.bucket,
    }


def _resolve(value: Any, params: dict[str, str]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            return params[value["Ref"]]
        return {k: _resolve(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, params) for v in value]
    return value


def _table(ddb: Any, props: dict[str, Any]) -> None:
    name = props["TableName"]
    args: dict[str, Any] = {k: props[k] for k in ("TableName", "AttributeDefinitions", "KeySchema", "BillingMode",
                                                  "GlobalSecondaryIndexes") if k in props}
    if "StreamSpecification" in props:
        args["StreamSpecification"] = {"StreamEnabled": True, **props["StreamSpecification"]}
    try:
        ddb.create_table(**args)
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        log.info("created table %s", name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
    ttl = props.get("TimeToLiveSpecification")
    if ttl:
        current = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)


def _bucket(s3: Any, props: dict[str, Any], region: str) -> None:
    name = props["BucketName"]
    try:
        if region == "us-east-1":
            s3.create_bucket(Bucket=name)
        else:
            s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
        log.info("created bucket %s", name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise
    if "BucketEncryption" in props:
        # CloudFormation spells the rule ServerSideEncryptionByDefault; the S3 API, Apply...
        rules = [{"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"]}
                 for r in props["BucketEncryption"]["ServerSideEncryptionConfiguration"]]
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
    if "LifecycleConfiguration" in props:  # moto's CloudFormation ignores it: applied here, as deployed
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": [
            {"ID": r["Id"], "Status": r["Status"], "Filter": {"Prefix": r["Prefix"]},
             "Expiration": {"Days": r["ExpirationInDays"]}} for r in props["LifecycleConfiguration"]["Rules"]]})


def bootstrap(config: Config, template: Path = TEMPLATE) -> None:
    doc = json.loads(template.read_text())
    params = parameters(config)
    ddb, s3 = aws.client("dynamodb", config), aws.client("s3", config)
    for resource in doc["Resources"].values():
        props = _resolve(resource["Properties"], params)
        if resource["Type"] == "AWS::DynamoDB::Table":
            _table(ddb, props)
        elif resource["Type"] == "AWS::S3::Bucket":
            _bucket(s3, props, config.region)


def stream_arn(config: Config) -> str:
    desc = aws.client("dynamodb", config).describe_table(TableName=config.messages_table)["Table"]
    return str(desc["LatestStreamArn"])
