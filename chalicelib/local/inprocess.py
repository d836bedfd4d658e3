"""Metro's own AWS calls handed to the embedded emulator in the process, without a socket.

The local stack and its emulator share one process, and each AWS call used to cross it over HTTP: botocore's
urllib3 client, a loopback connection, werkzeug's server and http.server parsing the request again. A botocore
``before-send`` handler on Metro's clients (:func:`chalicelib.store.aws.register_handler`) now builds the WSGI
request from botocore's prepared request and calls the emulator's application directly (the same application
the HTTP port serves, durable recorder included), then gives botocore the answer as if it had come over the wire.
Everything above the transport is unchanged: serialization, signing, retries, error parsing, the call counters and
the injected faults (registered first, they still fail requests before they reach the emulator). Other processes
(Spark jobs, the AWS CLI) still use the HTTP port. docs/decisions/local-inprocess-aws.md has the figures.
"""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import unquote, urlsplit

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders

from chalicelib.local import wsgi
from chalicelib.local.wsgi import WsgiApp


class _Raw(io.BytesIO):
    """The answer's body as botocore reads a urllib3 response: whole, or streamed in chunks."""

    def stream(self, amt: int = 65536, **_: Any) -> Any:
        while chunk := self.read(amt):
            yield chunk


def _body(request: AWSPreparedRequest) -> bytes:
    body = request.body
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    data = body.read()  # a file-like body (S3 uploads): botocore rewinds it itself on a retry
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def environ_of(request: AWSPreparedRequest, body: bytes) -> dict[str, Any]:
    """The WSGI environment werkzeug's server would have built for this request."""
    url = urlsplit(request.url)
    host = url.netloc
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method, "SCRIPT_NAME": "", "PATH_INFO": unquote(url.path or "/", "latin-1"),
        "QUERY_STRING": url.query, "RAW_URI": url.path + (f"?{url.query}" if url.query else ""),
        "SERVER_NAME": url.hostname or "127.0.0.1", "SERVER_PORT": str(url.port or 80),
        "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": host, **wsgi.server_fields(body, url.scheme or "http"),
    }
    environ["REQUEST_URI"] = environ["RAW_URI"]
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = text
        elif key != "CONTENT_LENGTH":
            environ[f"HTTP_{key}"] = text
    return environ


class InProcessTransport:
    """The ``before-send`` handler: answers requests to ``endpoint`` by calling ``app``; lets others through."""

    def __init__(self, app: WsgiApp, endpoint: str) -> None:
        self._app = app
        self._prefix = endpoint.rstrip("/") + "/"
        self.calls = 0

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        if not (request.url + "/").startswith(self._prefix):
            return None
        status, headers, content = wsgi.call(self._app, environ_of(request, _body(request)))
        self.calls += 1
        joined: dict[str, str] = {}  # as urllib3 gives a header sent twice: its values joined
        for name, value in headers:
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        return AWSResponse(request.url, int(status.split(" ", 1)[0]), HTTPHeaders.from_dict(joined), _Raw(content))
