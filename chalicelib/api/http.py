"""HTTP <-> domain: request parsing, the JSON dialects, and the one place errors are rendered."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from chalice.app import Response

from chalicelib.core.errors import InvalidArgument, MetroError, NotFound
from chalicelib.core.wire.responses import ToWire

log = logging.getLogger("metro.api")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")

JSON: dict[str, str | list[str]] = {"Content-Type": "application/json; charset=utf-8"}
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "application/x-www-form-urlencoded",
                 "text/plain", "application/octet-stream"]

# Enums that appear in Metro's responses, as numbers for the `$alt=json;enum-encoding=int` dialect.
_ENUMS: dict[str, dict[str, int]] = {
    "state": {"STATE_UNSPECIFIED": 0, "ACTIVE": 1, "RESOURCE_ERROR": 2, "INGESTION_RESOURCE_ERROR": 2,
              # an import topic's source (Google's AwsKinesis.State, CloudStorage.State, AwsMsk.State)
              "KINESIS_PERMISSION_DENIED": 2, "CLOUD_STORAGE_PERMISSION_DENIED": 2, "MSK_PERMISSION_DENIED": 2,
              "PUBLISH_PERMISSION_DENIED": 3, "STREAM_NOT_FOUND": 4, "BUCKET_NOT_FOUND": 4, "CLUSTER_NOT_FOUND": 4,
              "CONSUMER_NOT_FOUND": 5, "TOO_MANY_OBJECTS": 5, "TOPIC_NOT_FOUND": 5,
              # an export subscription's (Google's CloudStorageConfig.State, docs/export.md)
              "PERMISSION_DENIED": 2, "NOT_FOUND": 3},
    "encoding": {"ENCODING_UNSPECIFIED": 0, "JSON": 1, "BINARY": 2},
    "type": {"TYPE_UNSPECIFIED": 0, "PROTOCOL_BUFFER": 1, "AVRO": 2, "JSON_SCHEMA": 3},
}


def wants_int_enums(params: Mapping[str, str] | None) -> bool:
    return "enum-encoding=int" in (params or {}).get("$alt", "")


def _int_enums(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _ENUMS[k].get(v, v) if k in _ENUMS and isinstance(v, str) else _int_enums(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_int_enums(v) for v in value]
    return value


def json_response(result: ToWire | dict[str, Any], params: Mapping[str, str] | None = None,
                  status: int = 200) -> Response:
    body = result if isinstance(result, dict) else result.to_wire()
    if wants_int_enums(params):
        body = _int_enums(body)
    return Response(body=json.dumps(body, separators=(",", ":")), status_code=status, headers=JSON)


def error_response(err: MetroError) -> Response:
    return Response(body=json.dumps(err.to_wire()), status_code=err.http_code, headers=JSON)


# AMS's error envelope is Google's, with its own status strings for 401 and 403 and no details.
_AMS_STATUS = {"UNAUTHENTICATED": "UNAUTHORIZED", "PERMISSION_DENIED": "FORBIDDEN"}


def ams_error_response(err: MetroError) -> Response:
    body = {"error": {"code": err.http_code, "message": err.message, "status": _AMS_STATUS.get(err.status, err.status)}}
    return Response(body=json.dumps(body), status_code=err.http_code, headers=JSON)


def parse_body(raw: str | bytes | None) -> Any:
    """The request's JSON body; an empty body is ``{}`` as protobuf JSON allows."""
    if not raw or not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_float=_finite_float, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"Invalid JSON payload received. {str(exc)[:120]}") from None
    except RecursionError:
        raise InvalidArgument("Invalid JSON payload received. The request is nested too deeply.") from None
    if _may_hold_surrogates(raw):
        _refuse_lone_surrogates(value)
    return value


def _may_hold_surrogates(raw: str | bytes) -> bool:
    """Only a ``\\uD800``-``\\uDFFF`` escape can put a lone surrogate into parsed JSON (UTF-8 cannot)."""
    if isinstance(raw, str):
        return _SURROGATE_ESCAPE.search(raw) is not None
    return _SURROGATE_ESCAPE_BYTES.search(raw) is not None


def _refuse_lone_surrogates(value: Any) -> None:
    """Strings must be valid Unicode (proto3 strings are UTF-8); a lone surrogate is INVALID_ARGUMENT."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgument("Invalid JSON payload received. A string holds a lone UTF-16 surrogate "
                                      "(not valid UTF-8).") from None


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: no field of the API takes an infinite number
        raise ValueError(f"Number out of range: {text[:40]}")
    return value


def _no_constant(text: str) -> Any:
    raise ValueError(f"Unexpected token: {text}")  # NaN and Infinity are not JSON


def split_segment(segment: str) -> tuple[str, str]:
    """``{id}:{verb}`` arrives as one path segment (API Gateway cannot route on the colon)."""
    text = unquote(segment)
    resource_id, _, verb = text.partition(":")
    return resource_id, verb


def guarded(fn: Callable[[], Response], render: Callable[[MetroError], Response] = error_response) -> Response:
    """Run a handler; every failure becomes an error in the dialect's envelope, never a stack trace."""
    try:
        return fn()
    except MetroError as err:
        if err.http_code >= 500:
            log.warning("request failed: %s %s", err.status, err.message)
        return render(err)
    except Exception:  # a bug must not leak a traceback or stop the server
        log.exception("unhandled error")
        return render(MetroError("Internal error; the request may be retried."))


_CHALICE_REFUSALS: dict[int, type[MetroError]] = {400: InvalidArgument, 415: InvalidArgument, 405: NotFound}


def in_google_envelope(response: Response) -> Response:
    """Chalice's own refusals, made before a view runs (a media type the route does not take: 415, a method
    it does not serve: 405, each as ``{"Code", "Message"}``), in Google's envelope like every other error:
    a body Metro cannot read is INVALID_ARGUMENT, a method no route serves NOT_FOUND (api/routes.py)."""
    body = response.body
    if response.status_code < 400 or not isinstance(body, dict) or set(body) != {"Code", "Message"}:
        return response
    error = _CHALICE_REFUSALS.get(response.status_code, MetroError)(str(body["Message"])[:200])
    return error_response(error)


def not_found(method: str, path: str) -> Response:
    return error_response(NotFound(f"The requested URL {method} {path} was not found on this server."))
