"""Turns botocore failures into Metro's errors, so nothing above store/ sees botocore."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.core.errors import MetroError, ResourceExhausted, Unavailable

log = logging.getLogger(__name__)

_THROTTLED = {
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "SlowDown",
    "RequestThrottled",
    "TooManyRequestsException",
}


def code_of(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


CONDITIONAL = ("ConditionalCheckFailedException", "TransactionCanceledException")


@contextlib.contextmanager
def aws_errors(what: str, allow: tuple[str, ...] = CONDITIONAL) -> Iterator[None]:
    """Map AWS failures to Metro errors; ClientErrors whose code is in ``allow`` pass through."""
    try:
        yield
    except MetroError:
        raise
    except ClientError as exc:
        code = code_of(exc)
        if code in allow:
            raise
        log.warning("AWS error during %s: %s", what, exc)
        if code in _THROTTLED:
            raise ResourceExhausted(f"The backend is throttling {what}; retry with backoff.") from exc
        raise Unavailable(f"The backend failed during {what} ({code}); retry.") from exc
    except BotoCoreError as exc:
        log.warning("AWS connection error during %s: %s", what, exc)
        raise Unavailable(f"The backend is unreachable during {what}; retry.") from exc
