"""Reading (and the shared schema of) the Parquet archive written by spark_emr/compact.py.

The service calls :func:`read_archived_bodies` when a raw object named by the messages table is gone
(compaction deleted it after committing the hour's manifest). Only the manifests of the hours the
ids belong to, and only the parquet files whose id range may hold one of the ids, are read.

pyarrow is imported lazily so that importing this module costs nothing where it is not used.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.core.replay import archive_layout as layout

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from mypy_boto3_s3 import S3Client

# Columns of an archive parquet file, in order.
COLUMNS = ("message_id", "publish_time", "ordering_key", "attributes", "data", "raw_key", "request_id")

Body = tuple[bytes, dict[str, str], str]  # (data, attributes, ordering key)


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("message_id", pa.string(), nullable=False),
            pa.field("publish_time", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("ordering_key", pa.string()),
            pa.field("attributes", pa.map_(pa.string(), pa.string())),
            pa.field("data", pa.binary()),
            pa.field("raw_key", pa.string()),
            pa.field("request_id", pa.string()),
        ]
    )


def table_to_parquet(table: pa.Table) -> bytes:
    """Serialize an archive table (already in :func:`arrow_schema`) to Parquet bytes."""
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=64 * 1024, use_dictionary=["ordering_key"])
    return sink.getvalue()


def parquet_to_table(blob: bytes, columns: Iterable[str] | None = None) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(blob), columns=list(columns) if columns is not None else None)


def _is_missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("NoSuchKey", "404", "NotFound")


def read_manifest(s3_client: S3Client, bucket: str, topic: str, hour: datetime) -> layout.Manifest | None:
    """The committed manifest of one topic hour, or None when the hour has none."""
    return read_manifest_version(s3_client, bucket, topic, hour)[0]


def read_manifest_version(
    s3_client: S3Client, bucket: str, topic: str, hour: datetime
) -> tuple[layout.Manifest | None, str]:
    """The committed manifest of one topic hour and its ETag (``(None, "")`` when the hour has none).

    Compaction replaces a manifest only ``If-Match`` this ETag (:func:`put_manifest`).
    """
    try:
        obj = s3_client.get_object(Bucket=bucket, Key=layout.manifest_key(topic, hour))
    except Exception as exc:
        if _is_missing(exc):
            return None, ""
        raise
    return layout.parse_manifest(obj["Body"].read()), str(obj.get("ETag", ""))


def put_manifest(s3_client: S3Client, bucket: str, manifest: layout.Manifest, replaces_etag: str) -> bool:
    """Commit ``manifest`` only over the version it was planned from: ``If-Match`` that version's ETag, or
    ``If-None-Match: *`` when the hour had none. False when another run committed the hour meanwhile."""
    key = layout.manifest_key(manifest.topic, manifest.hour)
    body = layout.serialize_manifest(manifest)
    kind = "application/json"
    try:
        if replaces_etag:
            s3_client.put_object(Bucket=bucket, Key=key, Body=body, ContentType=kind, IfMatch=replaces_etag)
        else:
            s3_client.put_object(Bucket=bucket, Key=key, Body=body, ContentType=kind, IfNoneMatch="*")
    except Exception as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        if code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
            return False
        raise
    return True


def _read_hour(s3_client: S3Client, bucket: str, manifest: layout.Manifest, wanted: set[str]) -> dict[str, Body]:
    import pyarrow.compute as pc

    found: dict[str, Body] = {}
    for f in manifest.files_for(wanted):
        blob = s3_client.get_object(Bucket=bucket, Key=f.key)["Body"].read()
        table = parquet_to_table(blob, ["message_id", "attributes", "data", "ordering_key"])
        table = table.filter(pc.is_in(table["message_id"], value_set=_string_array(wanted)))
        for row in table.to_pylist():
            found[row["message_id"]] = (row["data"] or b"", dict(row["attributes"] or []), row["ordering_key"] or "")
    return found


def _string_array(values: Iterable[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(sorted(values), type=pa.string())


def read_archived_bodies(s3_client: S3Client, bucket: str, topic: str, message_ids: Iterable[str]) -> dict[str, Body]:
    """Bodies of archived messages of ``topic``: ``{message_id: (data, attributes, ordering_key)}``.

    Ids that are not in the archive (not compacted yet, or past retention) are absent from the
    result. If compaction replaces an hour's files while we read (a new generation), the read of
    a superseded file fails with NoSuchKey and the hour is read again from its new manifest.
    """
    by_hour: dict[int, set[str]] = defaultdict(set)
    for mid in message_ids:
        by_hour[layout.hour_start_ms(layout.publish_ms(mid))].add(mid)
    result: dict[str, Body] = {}
    for start_ms, wanted in sorted(by_hour.items()):
        hour = layout.hour_of_ms(start_ms)
        for attempt in range(3):
            manifest = read_manifest(s3_client, bucket, topic, hour)
            if manifest is None:
                break
            try:
                result.update(_read_hour(s3_client, bucket, manifest, wanted))
                break
            except Exception as exc:
                if not _is_missing(exc) or attempt == 2:
                    raise
    return result
