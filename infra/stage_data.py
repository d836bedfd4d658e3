"""What a stage holds outside its stacks: the push subscriptions' event source mappings Metro makes at run time,
and the data (tables, bucket, queues) that ``destroy --delete-data`` removes. Every listing is paged."""

from __future__ import annotations

import contextlib
from typing import Any

from infra.names import StageNames


def _push_mappings(lam: Any, function: str) -> list[dict[str, Any]]:
    pages = lam.get_paginator("list_event_source_mappings").paginate(FunctionName=function)
    return [m for page in pages for m in page.get("EventSourceMappings", [])]


def repair_push_mappings(lam: Any, function: str) -> int:
    """Metro makes each push subscription's queue mapping with partial batch failure reports
    (chalicelib/store/mappings.py); turn them on for any mapping made without (by hand, by an old version)."""
    repaired = 0
    for mapping in _push_mappings(lam, function):
        if "ReportBatchItemFailures" not in mapping.get("FunctionResponseTypes", []):
            lam.update_event_source_mapping(UUID=mapping["UUID"], FunctionResponseTypes=["ReportBatchItemFailures"])
            repaired += 1
    return repaired


def remove_push_mappings(lam: Any, function: str) -> int:
    """Delete the event source mappings Metro made for push subscriptions (not part of any stack)."""
    uuids = [m["UUID"] for m in _push_mappings(lam, function)]
    for mapping in uuids:
        lam.delete_event_source_mapping(UUID=mapping)
    return len(uuids)


def queue_urls(sqs: Any, prefix: str) -> list[str]:
    """Every queue whose name starts with ``prefix`` (ListQueues answers 1,000 at most per page)."""
    pages = sqs.get_paginator("list_queues").paginate(QueueNamePrefix=prefix, PaginationConfig={"PageSize": 1000})
    return [url for page in pages for url in page.get("QueueUrls", [])]


def delete_stage_data(names: StageNames, bucket: str, ddb: Any, s3: Any, sqs: Any) -> int:
    """Tables, bucket (emptied first), subscription queues and every retained fan-out DLQ of the stage; returns
    the queues deleted."""
    for table in names.tables:
        with contextlib.suppress(ddb.exceptions.ResourceNotFoundException):
            ddb.delete_table(TableName=table)
    with contextlib.suppress(s3.exceptions.NoSuchBucket):
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                      for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
            if doomed:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": doomed, "Quiet": True})
        s3.delete_bucket(Bucket=bucket)
    urls = queue_urls(sqs, names.queue_prefix + "-") + queue_urls(sqs, names.dlq)
    for url in urls:
        with contextlib.suppress(sqs.exceptions.QueueDoesNotExist):
            sqs.delete_queue(QueueUrl=url)
    return len(urls)
