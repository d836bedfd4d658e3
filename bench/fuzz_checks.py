"""schemathesis hooks for `make fuzz` (loaded through SCHEMATHESIS_HOOKS=bench.fuzz_checks): the check that
every error is Google's envelope with the status that goes with its HTTP code, and a tally of every answer
(one line per response, appended to $METRO_FUZZ_TALLY) from which bench/fuzz.py counts requests and statuses.
Generated names are steered onto the seeded resources, which are restored when a request destroys them
(bench/fuzz_seed.py); the stack is $METRO_FUZZ_URL, with the admin key $METRO_FUZZ_KEY in keys mode.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import schemathesis
from hypothesis import strategies as st

from bench.fuzz_seed import destroys_seeded_state, restore, steered
from chalicelib.api.openapi.description import PATH_PARAMETERS

# google.rpc.Code names and the HTTP status Google's REST APIs answer each with.
GOOGLE_STATUS_CODES = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "ABORTED": 409, "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499, "UNKNOWN": 500, "INTERNAL": 500, "DATA_LOSS": 500, "UNIMPLEMENTED": 501, "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
_lock = threading.Lock()


def envelope_problem(status_code: int, body: Any) -> str:
    """What is wrong with an error answer's body ('' when it is Google's envelope with the right status)."""
    if not isinstance(body, dict) or set(body) != {"error"} or not isinstance(body["error"], dict):
        return "the body is not {\"error\": {...}}"
    error = body["error"]
    if not {"code", "message", "status"} <= set(error) or not isinstance(error["message"], str):
        return "the error lacks code, message or status"
    if error["code"] != status_code:
        return f"error.code {error['code']!r} is not the HTTP status {status_code}"
    if GOOGLE_STATUS_CODES.get(error["status"]) != status_code:
        return f"error.status {error['status']!r} does not go with HTTP {status_code}"
    return ""


def _tally(method: str, path: str, status_code: int) -> None:
    target = os.environ.get("METRO_FUZZ_TALLY")
    if target:
        with _lock, open(target, "a", encoding="utf-8") as out:
            out.write(f"{status_code} {method} {path}\n")


@schemathesis.check
def google_error_envelope(ctx: Any, response: Any, case: Any) -> bool | None:
    _tally(case.method, case.operation.path, response.status_code)
    if response.status_code < 400:
        return None
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"HTTP {response.status_code} without a JSON body: {response.text[:200]!r}") from None
    problem = envelope_problem(response.status_code, body)
    if problem:
        raise AssertionError(f"HTTP {response.status_code}: {problem}: {response.text[:200]!r}")
    return None


@schemathesis.hook
def flatmap_path_parameters(ctx: Any, path_parameters: dict[str, Any]) -> Any:
    return st.sampled_from(steered(path_parameters, PATH_PARAMETERS))


@schemathesis.hook
def after_call(ctx: Any, case: Any, response: Any) -> None:
    url = os.environ.get("METRO_FUZZ_URL")
    if url and destroys_seeded_state(case.method, case.operation.path, response.status_code):
        key = os.environ.get("METRO_FUZZ_KEY")
        restore(url, {"x-api-key": key} if key else {})
