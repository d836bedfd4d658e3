"""The one error hierarchy of Metro: each error carries its Google RPC status and HTTP code.

The api layer renders these as ``{"error": {"code", "message", "status"}}``; nothing else
in the code base formats an error for the wire.
"""

from __future__ import annotations

from typing import Any


class MetroError(Exception):
    """Base class: a failure that a client can see."""

    http_code = 500
    status = "INTERNAL"

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []

    def to_wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.http_code, "message": self.message, "status": self.status}
        if self.details:
            body["details"] = self.details
        return {"error": body}


class InvalidArgument(MetroError):
    http_code = 400
    status = "INVALID_ARGUMENT"


class FailedPrecondition(MetroError):
    http_code = 400
    status = "FAILED_PRECONDITION"


class Unauthenticated(MetroError):
    http_code = 401
    status = "UNAUTHENTICATED"


class PermissionDenied(MetroError):
    http_code = 403
    status = "PERMISSION_DENIED"


class NotFound(MetroError):
    http_code = 404
    status = "NOT_FOUND"


class AlreadyExists(MetroError):
    http_code = 409
    status = "ALREADY_EXISTS"


class Aborted(MetroError):
    http_code = 409
    status = "ABORTED"


class ResourceExhausted(MetroError):
    http_code = 429
    status = "RESOURCE_EXHAUSTED"


class Internal(MetroError):
    http_code = 500
    status = "INTERNAL"


class Unavailable(MetroError):
    http_code = 503
    status = "UNAVAILABLE"
