"""Metro's errors (core/errors.py) as gRPC statuses: the same code name, the same message, and the details
(``google.rpc.ErrorInfo`` for exactly-once acknowledgement failures) in ``grpc-status-details-bin``, where
google-cloud-pubsub's subscriber reads them."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from chalicelib.core.errors import MetroError

_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def _detail(detail: dict[str, Any]) -> any_pb2.Any | None:
    if detail.get("@type") != _ERROR_INFO:
        return None
    info = error_details_pb2.ErrorInfo(reason=str(detail.get("reason", "")), domain=str(detail.get("domain", "")),
                                       metadata={str(k): str(v) for k, v in dict(detail.get("metadata", {})).items()})
    packed = any_pb2.Any()
    packed.Pack(info)
    return packed


def status_of(error: MetroError) -> grpc.Status:
    """The gRPC status of an error, its details attached."""
    code = code_pb2.Code.Value(error.status) if error.status in code_pb2.Code.keys() else code_pb2.INTERNAL  # noqa: SIM118
    details = [packed for d in error.details if (packed := _detail(d)) is not None]
    return rpc_status.to_status(status_pb2.Status(code=code, message=error.message, details=details))


def code_of(error: MetroError) -> grpc.StatusCode:
    return grpc.StatusCode[error.status] if error.status in grpc.StatusCode.__members__ else grpc.StatusCode.INTERNAL
