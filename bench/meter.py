"""Billing units of one AWS call, computed from its parameters and parsed response.

Installed as the meter of :class:`chalicelib.store.aws.RequestCounter`. Units (all floats):

- DynamoDB: ``wu`` write units (1 per KiB of item written, rounded up per item; transactions count
  double), ``ru`` read units (1 per 4 KiB read, strongly consistent; 0.5 when eventually
  consistent; Query/Scan round the sum of the items read), ``item_bytes_written``/``item_bytes_read``.
  UpdateItem and DeleteItem do not show the stored item: we size it from the key and the values the
  request carries (at least 1 unit), which is exact for Metro's small lease items.
- SQS: ``billed`` requests (one per started 64 KiB of payload, at least one per call), ``billed_fifo``
  the same for FIFO queues, ``payload_bytes``, ``messages`` sent/received/deleted.
- S3: ``put_class`` (PUT, COPY, POST, LIST) or ``get_class`` (GET, HEAD and the rest; DELETE is free)
  requests, ``bytes_in``/``bytes_out``.
- SNS: ``billed`` publish requests (one per started 64 KiB), ``messages``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

KIB = 1024
SQS_CHUNK = 64 * KIB

# -- DynamoDB item sizes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") if text.strip("-0.") else "0"
    return (len(digits) + 1) // 2 + 1


_VALUE_SIZES: dict[str, Callable[[Any], int]] = {
    "S": lambda v: len(str(v).encode()),
    "N": lambda v: _number_size(str(v)),
    "B": len,
    "BOOL": lambda _v: 1,
    "NULL": lambda _v: 1,
    "SS": lambda v: sum(len(s.encode()) for s in v),
    "NS": lambda v: sum(_number_size(n) for n in v),
    "BS": lambda v: sum(len(b) for b in v),
    "L": lambda v: 3 + sum(value_size(x) + 1 for x in v),
    "M": lambda v: 3 + sum(len(k.encode()) + value_size(x) + 1 for k, x in v.items()),
}


def value_size(value: Mapping[str, Any]) -> int:
    (kind, v), = value.items()
    size = _VALUE_SIZES.get(kind)
    return size(v) if size else 0


def item_size(item: Mapping[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _wu(size: int) -> float:
    return float(max(1, math.ceil(size / KIB)))


def _ru(size: int, consistent: bool) -> float:
    units = float(max(1, math.ceil(size / (4 * KIB))))
    return units if consistent else units / 2


def _estimated_item(params: Mapping[str, Any]) -> int:
    """Size of an item the request changes but does not carry whole (UpdateItem, DeleteItem, ConditionCheck)."""
    size = item_size(params.get("Key", {}))
    for name, value in params.get("ExpressionAttributeValues", {}).items():
        size += len(name.lstrip(":").encode()) + value_size(value)
    return size


def _put(params: Mapping[str, Any], _parsed: Mapping[str, Any]) -> dict[str, float]:
    size = item_size(params.get("Item", {}))
    return {"wu": _wu(size), "item_bytes_written": float(size)}


def _update(params: Mapping[str, Any], _parsed: Mapping[str, Any]) -> dict[str, float]:
    size = _estimated_item(params)
    return {"wu": _wu(size), "item_bytes_written": float(size)}


def _batch_write(params: Mapping[str, Any], _parsed: Mapping[str, Any]) -> dict[str, float]:
    wu = written = 0.0
    for requests in params.get("RequestItems", {}).values():
        for r in requests:
            size = item_size(r["PutRequest"]["Item"]) if "PutRequest" in r else item_size(r["DeleteRequest"]["Key"])
            wu += _wu(size)
            written += size
    return {"wu": wu, "item_bytes_written": written}


def _transact_write(params: Mapping[str, Any], _parsed: Mapping[str, Any]) -> dict[str, float]:
    wu = written = 0.0
    for op in params.get("TransactItems", []):
        (kind, body), = op.items()
        size = item_size(body["Item"]) if kind == "Put" else _estimated_item(body)
        wu += 2 * _wu(size)
        written += size
    return {"wu": wu, "item_bytes_written": written}


def _get(params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    size = item_size(parsed.get("Item", {}))
    return {"ru": _ru(size, bool(params.get("ConsistentRead", False))), "item_bytes_read": float(size)}


def _query(params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    size = sum(item_size(i) for i in parsed.get("Items", []))
    return {"ru": _ru(size, bool(params.get("ConsistentRead", False))), "item_bytes_read": float(size)}


def _batch_get(params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    ru = read = 0.0
    for table, items in parsed.get("Responses", {}).items():
        strong = bool(params.get("RequestItems", {}).get(table, {}).get("ConsistentRead", False))
        for i in items:
            ru += _ru(item_size(i), strong)
            read += item_size(i)
    return {"ru": ru, "item_bytes_read": read}


def _transact_get(_params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    sizes = [item_size(r.get("Item", {})) for r in parsed.get("Responses", [])]
    return {"ru": sum(2 * _ru(s, True) for s in sizes), "item_bytes_read": float(sum(sizes))}


_DYNAMODB_UNITS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, float]]] = {
    "PutItem": _put, "UpdateItem": _update, "DeleteItem": _update, "BatchWriteItem": _batch_write,
    "TransactWriteItems": _transact_write, "GetItem": _get, "Query": _query, "Scan": _query,
    "BatchGetItem": _batch_get, "TransactGetItems": _transact_get,
}


def dynamodb(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    units = _DYNAMODB_UNITS.get(operation)
    # control plane (DescribeTable, CreateTable, ...): not billed per request
    return units(params, parsed) if units else {}


# -- SQS -----------------------------------------------------------------------------------------


def _sqs_attributes_size(attributes: Mapping[str, Any]) -> int:
    size = 0
    for name, attr in attributes.items():
        size += len(name.encode()) + len(str(attr.get("DataType", "")).encode())
        if "StringValue" in attr:
            size += len(str(attr["StringValue"]).encode())
        if "BinaryValue" in attr:
            size += len(attr["BinaryValue"])
    return size


def _sqs_message_size(m: Mapping[str, Any], body_key: str) -> int:
    return len(str(m.get(body_key, "")).encode()) + _sqs_attributes_size(m.get("MessageAttributes", {}))


def _chunks(payload: int) -> float:
    return float(max(1, math.ceil(payload / SQS_CHUNK)))


def sqs(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    fifo = str(params.get("QueueUrl", "")).endswith(".fifo")
    messages = 0
    if operation == "SendMessage":
        payload, messages = _sqs_message_size(params, "MessageBody"), 1
    elif operation == "SendMessageBatch":
        entries = params.get("Entries", [])
        payload, messages = sum(_sqs_message_size(e, "MessageBody") for e in entries), len(entries)
    elif operation == "ReceiveMessage":
        got = parsed.get("Messages", [])
        payload, messages = sum(_sqs_message_size(m, "Body") for m in got), len(got)
    elif operation in ("DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
        payload, messages = 0, len(params.get("Entries", []))
    else:
        payload = 0
    billed = _chunks(payload)
    out = {"payload_bytes": float(payload), "messages": float(messages)}
    out["billed_fifo" if fifo else "billed"] = billed
    return out


# -- S3 ------------------------------------------------------------------------------------------

_S3_PUT_CLASS = {"PutObject", "CopyObject", "PostObject", "ListObjects", "ListObjectsV2", "ListObjectVersions",
                 "ListBuckets", "CreateMultipartUpload", "UploadPart", "UploadPartCopy", "CompleteMultipartUpload",
                 "CreateBucket", "PutBucketEncryption", "PutBucketLifecycleConfiguration", "PutObjectTagging"}
_S3_FREE = {"DeleteObject", "DeleteObjects", "DeleteBucket", "AbortMultipartUpload"}


def s3(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    if operation in _S3_FREE:
        return {"free": 1.0}
    out: dict[str, float] = {}
    if operation in _S3_PUT_CLASS:
        out["put_class"] = 1.0
    else:
        out["get_class"] = 1.0
    body = params.get("Body")
    if isinstance(body, bytes | bytearray | str):
        out["bytes_in"] = float(len(body))
    if operation == "GetObject":
        out["bytes_out"] = float(parsed.get("ContentLength", 0) or 0)
    return out


# -- SNS -----------------------------------------------------------------------------------------


def sns(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    if operation == "Publish":
        return {"billed": _chunks(_sqs_message_size(params, "Message")), "messages": 1.0}
    if operation == "PublishBatch":
        entries = params.get("PublishBatchRequestEntries", [])
        payload = sum(_sqs_message_size(e, "Message") for e in entries)
        return {"billed": _chunks(payload), "messages": float(len(entries))}
    return {"billed": 1.0}


def meter(service: str, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, float]:
    if service == "dynamodb":
        return dynamodb(operation, params, parsed)
    if service == "sqs":
        return sqs(operation, params, parsed)
    if service == "s3":
        return s3(operation, params, parsed)
    if service == "sns":
        return sns(operation, params, parsed)
    return {}
