"""Turns botocore failures into Metro's errors, so nothing above store/ sees botocore.

What a client sees is chosen by the kind of failure, never copied from AWS: AWS error codes and
messages name tables, queues, keys and account details, so they go to the log only.

- throttling (any service's throttling codes, or HTTP 429): RESOURCE_EXHAUSTED (429) with a retry hint;
- a value AWS refuses (ValidationException and the like): INVALID_ARGUMENT (400), since a retry cannot help;
- a conflict with a concurrent transaction: ABORTED (409), which Google's clients retry;
- a misconfiguration (access denied, credentials missing or refused, a table, bucket, queue or function that
  should exist and does not): FAILED_PRECONDITION (400) with no retry hint, since no retry can succeed until
  an operator mends it (Google's publishers retry INTERNAL and UNAVAILABLE without end), and an error-level log
  line naming the AWS operation and code;
- anything else, and connection failures: UNAVAILABLE (503) with a retry hint.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from chalicelib.core.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    MetroError,
    ResourceExhausted,
    Unavailable,
)

log = logging.getLogger(__name__)

# The throttling codes of DynamoDB, S3, SQS and Lambda (and the generic ones botocore's retry mode knows).
THROTTLED = frozenset({
    "ThrottlingException", "Throttling", "ThrottledException", "RequestThrottledException",
    "ProvisionedThroughputExceededException", "RequestLimitExceeded", "LimitExceededException",
    "TooManyRequestsException", "SlowDown", "RequestThrottled", "OverLimit", "KmsThrottled",
    "BandwidthLimitExceeded", "PriorRequestNotComplete",
})
# Codes that say the request itself carried a value AWS refuses: retrying the same request cannot succeed.
INVALID = frozenset({
    "ValidationException", "ValidationError", "SerializationException", "InvalidParameterValue",
    "InvalidParameterValueException", "InvalidParameterCombination", "InvalidAttributeValue",
    "InvalidArgument", "InvalidRequest", "InvalidRange", "MissingParameter", "EntityTooLarge",
    "KeyTooLongError", "BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong",
    "InvalidMessageContents", "ItemCollectionSizeLimitExceededException",
})
CONFLICT = frozenset({"TransactionConflictException", "TransactionInProgressException",
                      "TransactionCanceledException", "ConditionalCheckFailedException"})
# Codes that say Metro's own setup is wrong: its role may not do this, its credentials are refused, or a table,
# bucket, queue or function it was configured with does not exist. A caller's retry cannot mend any of them.
MISCONFIGURED = frozenset({
    "AccessDenied", "AccessDeniedException", "AWS.SimpleQueueService.AccessDenied", "UnauthorizedOperation",
    "AuthorizationError", "UnrecognizedClientException", "InvalidClientTokenId", "InvalidAccessKeyId",
    "SignatureDoesNotMatch", "MissingAuthenticationToken", "IncompleteSignature", "AllAccessDisabled",
    "KMS.AccessDeniedException", "KMSAccessDeniedException", "KMS.DisabledException", "KMSDisabledException",
    "KMS.NotFoundException", "KMSNotFoundException", "ResourceNotFoundException", "TableNotFoundException",
    "NoSuchBucket", "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist",
})
# Client-side failures of the same kind: no credentials or no region to sign with.
_UNCONFIGURED = (NoCredentialsError, PartialCredentialsError, NoRegionError)
MISCONFIGURED_MESSAGE = "The service cannot use its storage as configured; its operator has to fix the setup."

RETRY_DELAY = "1s"  # the hint Metro gives; Google's clients back off exponentially from their own settings


def retry_info(delay: str = RETRY_DELAY) -> dict[str, Any]:
    """A google.rpc.RetryInfo error detail."""
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}


def code_of(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status_of(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


CONDITIONAL = ("ConditionalCheckFailedException", "TransactionCanceledException")


def client_error(exc: ClientError, what: str) -> MetroError:
    """The Metro error for an AWS error during ``what``; the AWS code and message are logged, not returned."""
    code = code_of(exc)
    if code in MISCONFIGURED:
        log.error("misconfiguration: AWS refused %s (%s): %s %s", what, exc.operation_name, code,
                  exc.response.get("Error", {}).get("Message", ""))
        return FailedPrecondition(MISCONFIGURED_MESSAGE)
    log.warning("AWS error during %s: %s", what, exc)
    if code in THROTTLED or _status_of(exc) == 429:
        return ResourceExhausted("The service is busy; retry with backoff.", [retry_info()])
    if code in INVALID:
        return InvalidArgument("The request has a value the service cannot store or use.")
    if code in CONFLICT:
        return Aborted("The request conflicted with a concurrent change; retry.")
    return Unavailable("The service is temporarily unavailable; retry.", [retry_info()])


def connection_error(exc: BotoCoreError, what: str) -> MetroError:
    if isinstance(exc, _UNCONFIGURED):
        log.error("misconfiguration: %s cannot be sent to AWS: %s", what, type(exc).__name__)
        return FailedPrecondition(MISCONFIGURED_MESSAGE)
    log.warning("AWS connection error during %s: %s", what, exc)
    return Unavailable("The service is temporarily unavailable; retry.", [retry_info()])


@contextlib.contextmanager
def aws_errors(what: str, allow: tuple[str, ...] = CONDITIONAL) -> Iterator[None]:
    """Map AWS failures to Metro errors; ClientErrors whose code is in ``allow`` pass through."""
    try:
        yield
    except MetroError:
        raise
    except ClientError as exc:
        if code_of(exc) in allow:
            raise
        raise client_error(exc, what) from exc
    except BotoCoreError as exc:
        raise connection_error(exc, what) from exc
