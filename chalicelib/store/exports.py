"""Export subscriptions' S3 side (docs/export.md): the bucket check at create and update, and the one PutObject
per batch, made with Metro's role or with the role a ``serviceAccountEmail`` maps to (assumed through STS).

A bucket that is gone or that the role may not write is reported as a value (:data:`NOT_FOUND`,
:data:`PERMISSION_DENIED`), not raised: the service refuses the create with FAILED_PRECONDITION and the writer
records it as the subscription's ``state``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.export_files import ACTIVE, NOT_FOUND, PERMISSION_DENIED
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, code_of

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

_GONE = frozenset({"NoSuchBucket", "404", "NotFound"})
_DENIED = frozenset({"AccessDenied", "403", "Forbidden", "AllAccessDisabled", "AccessDeniedException",
                     "InvalidAccessKeyId", "ExpiredToken", "InvalidToken"})
_PASS = tuple(_GONE | _DENIED)
SESSION_SECONDS = 3600
_RENEW_BEFORE = 300.0


def state_of(exc: ClientError) -> str | None:
    """The export state a failed S3 call means, or None for a failure that is not the bucket's (throttling,
    a network error)."""
    code = code_of(exc)
    if code in _GONE:
        return NOT_FOUND
    if code in _DENIED:
        return PERMISSION_DENIED
    return None


class ExportStore:
    def __init__(self, config: Config) -> None:
        self.config = config
        self._s3 = aws.s3(config)
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[float, S3Client]] = {}

    def check_bucket(self, bucket: str, role_arn: str = "") -> str:
        """ACTIVE when ``bucket`` exists and the role can reach it (HeadBucket), else NOT_FOUND or
        PERMISSION_DENIED."""
        try:
            with aws_errors("HeadBucket (export)", allow=_PASS):
                self._client(role_arn).head_bucket(Bucket=bucket)
        except ClientError as exc:
            state = state_of(exc)
            if state is None:
                raise
            log.warning("export bucket %s: %s (%s)", bucket, state, code_of(exc))
            return state
        return ACTIVE

    def put(self, bucket: str, key: str, body: bytes, content_type: str, role_arn: str = "") -> str:
        """One PutObject (atomic: the object is whole or absent); ACTIVE, NOT_FOUND or PERMISSION_DENIED.
        Other failures raise (the batch goes back to the queue)."""
        try:
            with aws_errors("PutObject (export)", allow=_PASS):
                self._client(role_arn).put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)
        except ClientError as exc:
            state = state_of(exc)
            if state is None:
                raise
            log.error("export to bucket %s failed: %s (%s)", bucket, state, code_of(exc))
            return state
        return ACTIVE

    def _client(self, role_arn: str) -> S3Client:
        """Metro's own S3 client, or one with the credentials of ``role_arn`` (kept until 5 minutes before
        they expire)."""
        if not role_arn:
            return self._s3
        now = time.time()
        with self._lock:
            held = self._sessions.get(role_arn)
            if held is not None and held[0] - _RENEW_BEFORE > now:
                return held[1]
        with aws_errors("AssumeRole (export)"):
            creds = aws.client("sts", self.config).assume_role(
                RoleArn=role_arn, RoleSessionName="metro-export", DurationSeconds=SESSION_SECONDS)["Credentials"]
        client = _assumed_s3(self.config, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        with self._lock:
            self._sessions[role_arn] = (now + SESSION_SECONDS, client)
        return client


def _assumed_s3(config: Config, key: str, secret: str, token: str) -> S3Client:
    session = _session(key, secret, token)
    built: Any = session.client("s3", region_name=config.region, endpoint_url=config.endpoint_url,
                                config=BotoConfig(retries={"mode": "standard", "max_attempts": 5}))
    return cast("S3Client", aws.instrument(built))


@functools.lru_cache(maxsize=16)
def _session(key: str, secret: str, token: str) -> boto3.session.Session:
    return boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret, aws_session_token=token)
