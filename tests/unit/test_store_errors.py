"""store/errors.py: botocore failures become Metro errors by kind, and nothing of AWS's text reaches a client."""

from __future__ import annotations

import logging

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from chalicelib.core.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    MetroError,
    ResourceExhausted,
    Unavailable,
)
from chalicelib.store.errors import aws_errors

SECRET_DETAIL = "arn:aws:dynamodb:us-east-1:123456789012:table/metro-resources"


def client_error(code: str, status: int = 400) -> ClientError:
    response = {"Error": {"Code": code, "Message": f"detail about {SECRET_DETAIL}"},
                "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "Query")


def mapped(exc: Exception) -> MetroError:
    with pytest.raises(MetroError) as caught, aws_errors("List"):
        raise exc
    return caught.value


@pytest.mark.parametrize("code", ["ThrottlingException", "ProvisionedThroughputExceededException", "SlowDown",
                                  "RequestLimitExceeded", "TooManyRequestsException", "RequestThrottled"])
def test_throttling_is_resource_exhausted_with_a_retry_hint(code: str) -> None:
    err = mapped(client_error(code))
    assert isinstance(err, ResourceExhausted) and err.http_code == 429
    assert err.details == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]


def test_an_unknown_code_answered_with_http_429_is_throttling_too() -> None:
    assert isinstance(mapped(client_error("SomethingNew", status=429)), ResourceExhausted)


@pytest.mark.parametrize("code", ["ValidationException", "InvalidParameterValue", "SerializationException"])
def test_a_value_aws_refuses_is_invalid_argument_not_a_server_error(code: str) -> None:
    err = mapped(client_error(code))
    assert isinstance(err, InvalidArgument) and err.http_code == 400


def test_a_transaction_conflict_is_aborted() -> None:
    assert isinstance(mapped(client_error("TransactionConflictException")), Aborted)


@pytest.mark.parametrize("exc", [client_error("InternalServerError", 500), client_error("ServiceUnavailable", 503),
                                 EndpointConnectionError(endpoint_url="http://127.0.0.1:4566")])
def test_anything_else_is_unavailable_with_a_retry_hint(exc: Exception) -> None:
    err = mapped(exc)
    assert isinstance(err, Unavailable) and err.http_code == 503 and err.details


@pytest.mark.parametrize("code", ["ValidationException", "ThrottlingException", "InternalServerError",
                                  "TransactionConflictException"])
def test_the_wire_never_carries_the_aws_code_or_message_but_the_log_does(
        code: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="chalicelib.store.errors"):
        wire = str(mapped(client_error(code)).to_wire())
    assert code not in wire and SECRET_DETAIL not in wire and "Query" not in wire
    assert code in caplog.text and SECRET_DETAIL in caplog.text


def test_allowed_codes_pass_through_for_the_caller_to_handle() -> None:
    with pytest.raises(ClientError), aws_errors("Put", allow=("ConditionalCheckFailedException",)):
        raise client_error("ConditionalCheckFailedException")


def test_metro_errors_pass_unchanged() -> None:
    original = InvalidArgument("Invalid page token")
    assert mapped(original) is original


@pytest.mark.parametrize(("code", "status"), [
    ("AccessDeniedException", 400), ("AccessDenied", 403), ("UnrecognizedClientException", 400),
    ("InvalidClientTokenId", 403), ("KMS.AccessDeniedException", 400), ("ResourceNotFoundException", 400),
    ("NoSuchBucket", 404), ("AWS.SimpleQueueService.NonExistentQueue", 400),
])
def test_a_misconfiguration_is_failed_precondition_without_a_retry_hint(
        code: str, status: int, caplog: pytest.LogCaptureFixture) -> None:
    """Before, AccessDenied and a missing table were UNAVAILABLE with a retry hint: clients retried them forever."""
    with caplog.at_level(logging.WARNING, logger="chalicelib.store.errors"):
        err = mapped(client_error(code, status))
    assert isinstance(err, FailedPrecondition) and err.http_code == 400 and err.details == []
    wire = str(err.to_wire())
    assert "retry" not in wire.lower() and code not in wire and SECRET_DETAIL not in wire
    [record] = caplog.records
    assert record.levelno == logging.ERROR and "Query" in record.getMessage() and code in record.getMessage()
    assert "List" in record.getMessage()  # Metro's own name of the call, with AWS's operation


def test_missing_credentials_are_a_misconfiguration_too(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="chalicelib.store.errors"):
        err = mapped(NoCredentialsError())
    assert isinstance(err, FailedPrecondition) and not err.details
    assert [r.levelno for r in caplog.records] == [logging.ERROR] and "NoCredentialsError" in caplog.text
