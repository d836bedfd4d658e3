"""The CLI's one HTTP client: JSON over Metro's REST API, the token sent as a bearer token, errors read from
Google's envelope ``{"error": {"code", "message", "status"}}``. The transport is a plain function, so tests
hand the client a fake one."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
TIMEOUT_SECONDS = 90.0  # above a pull's long poll
# HTTP status -> Google's canonical status name, for an answer that carries no envelope.
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
                500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = b""


Transport = Callable[[HttpRequest, float], HttpResponse]


class ApiError(Exception):
    """An error answer (or no answer) from Metro: its canonical status name and message."""

    def __init__(self, status: str, message: str, code: int = 0) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.code = code


def urllib_transport(request: HttpRequest, timeout: float) -> HttpResponse:
    """The real transport: urllib, with no proxy for a loopback address (``make run``'s stack)."""
    handlers = [urllib.request.ProxyHandler({})] if urlsplit(request.url).hostname in LOOPBACK else []
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(request.url, data=request.body, headers=request.headers, method=request.method)
    try:
        with opener.open(req, timeout=timeout) as resp:
            return HttpResponse(resp.status, resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return HttpResponse(e.code, e.read())
    except (urllib.error.URLError, OSError) as e:
        reason = e.reason if isinstance(e, urllib.error.URLError) else e
        raise ApiError("UNAVAILABLE", f"cannot reach {request.url}: {reason}") from e


def error_of(response: HttpResponse) -> ApiError:
    """The error an answer carries: Google's envelope when there is one, else the HTTP status."""
    status, message, code = STATUS_NAMES.get(response.status, "UNKNOWN"), "", response.status
    try:
        envelope = json.loads(response.body or b"{}").get("error")
    except (ValueError, AttributeError):
        envelope = None
    if isinstance(envelope, Mapping):
        status = str(envelope.get("status") or status)
        message = str(envelope.get("message") or "")
        code = int(envelope.get("code") or code) if str(envelope.get("code", "")).isdigit() else code
    if not message:
        message = response.body.decode("utf-8", "replace").strip()[:500] or f"HTTP {response.status}"
    return ApiError(status, message, code)


class Client:
    """Metro's REST API at ``url`` (``http://127.0.0.1:8085``), with an optional token."""

    def __init__(self, url: str, token: str | None = None, transport: Transport = urllib_transport,
                 timeout: float = TIMEOUT_SECONDS) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.transport = transport
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None) -> Any:
        """One call; the parsed JSON answer ({} when empty). Raises ``ApiError``."""
        url = self.url + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        response = self.transport(HttpRequest(method, url, headers, data), self.timeout)
        if not 200 <= response.status < 300:
            raise error_of(response)
        if not response.body.strip():
            return {}
        try:
            return json.loads(response.body)
        except ValueError as e:
            raise ApiError("INTERNAL", f"not a JSON answer from {url}") from e

    def get(self, path: str, query: Mapping[str, str] | None = None) -> Any:
        return self.call("GET", path, query=query)

    def post(self, path: str, body: Any = None, query: Mapping[str, str] | None = None) -> Any:
        return self.call("POST", path, {} if body is None else body, query)

    def put(self, path: str, body: Any = None) -> Any:
        return self.call("PUT", path, {} if body is None else body)

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path)

    def pages(self, path: str, key: str, query: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a listing, following ``nextPageToken``."""
        params = dict(query or {})
        while True:
            page = self.get(path, params)
            yield from page.get(key) or []
            token = page.get("nextPageToken")
            if not token:
                return
            params["pageToken"] = str(token)
