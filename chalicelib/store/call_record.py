"""The opt-in recorder of AWS calls by acting function, for the IAM conformance gate (infra/iam_gate.py).

Every production entry point labels its thread with the Lambda function whose role would make the calls
(:func:`acting_as`: ``api_handler``, ``fanout``, ``push``, ``maintenance``, ``seek_worker``); thread pools carry
the label over (:func:`carry`, and ``aws.in_callers_part``). With ``METRO_IAM_RECORD=<directory>`` (read
by chalicelib/config.py), store/aws.py's client hooks hand every call to :func:`record`, which appends one JSON
line per *distinct* call to ``<directory>/calls-<pid>.jsonl``: the function ("" when no entry point set one:
the local emulator's bootstrap, a test's own calls), service, operation, the names the call's authorization
depends on (tables, bucket and the key's first path segment, queue, function, parameter names, stream,
namespace), and the outcome (``ok``, or the error code: ``NoSuchKey``, ``404``, ...). Duplicates are dropped in
memory, lines are appended under a lock, and no failure of the recorder ever reaches the call.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from chalicelib.config import iam_record_dir

P = ParamSpec("P")
R = TypeVar("R")

_local = threading.local()


# -- the acting function ---------------------------------------------------------------------------------------
def current_function() -> str:
    """The function this thread's AWS calls are made for ("" when none was set)."""
    return str(getattr(_local, "function", ""))


def set_function(function: str) -> str:
    """Label this thread's AWS calls with ``function``; returns the previous label."""
    previous = current_function()
    _local.function = function
    return previous


@contextmanager
def acting_as(function: str) -> Iterator[None]:
    """Run the block as ``function`` (an entry point of the app, or a local pump playing its event source)."""
    previous = set_function(function)
    try:
        yield
    finally:
        set_function(previous)


def carry(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap ``fn`` to run, on whichever thread, as the calling thread's function (for thread pools)."""
    function = current_function()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with acting_as(function):
            return fn(*args, **kwargs)

    return run


# -- what identifies a call ------------------------------------------------------------------------------------
def _segment(key: Any) -> str:
    """An S3 key reduced to its first path segment and "/" (``raw/``), or "" for a key without one."""
    text = str(key or "")
    return text.split("/", 1)[0] + "/" if "/" in text else text


def _queue(params: Mapping[str, Any]) -> str:
    if "QueueUrl" in params:
        return str(params["QueueUrl"]).rstrip("/").rsplit("/", 1)[-1]
    return str(params.get("QueueName", ""))


def _copy(params: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {name: params[name] if isinstance(params[name], bool) else str(params[name])
            for name in names if name in params}


def _dynamodb(operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
    out = _copy(params, "TableName", "IndexName")
    if "RequestItems" in params:
        out["Tables"] = sorted(str(t) for t in params["RequestItems"])
    if "TransactItems" in params:
        items = {(kind, str(body.get("TableName", ""))) for item in params["TransactItems"]
                 for kind, body in item.items()}
        out["Items"] = sorted([kind, table] for kind, table in items)
    return out


def _s3(operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
    out = _copy(params, "Bucket")
    for name in ("Key", "Prefix"):
        if name in params:
            out[name] = _segment(params[name])
    if operation == "DeleteObjects":
        out["Keys"] = sorted({_segment(o.get("Key")) for o in params.get("Delete", {}).get("Objects", [])})
    return out


def _ssm(operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
    out = _copy(params, "Name", "Path", "WithDecryption")
    if "Names" in params:
        out["Names"] = sorted(str(n) for n in params["Names"])
    return out


_BY_SERVICE: dict[str, Callable[[str, Mapping[str, Any]], dict[str, Any]]] = {
    "dynamodb": _dynamodb,
    "s3": _s3,
    "ssm": _ssm,
    "sqs": lambda _, params: {"Queue": _queue(params)},
    "lambda": lambda _, params: _copy(params, "FunctionName", "UUID", "EventSourceArn"),
    "dynamodb-streams": lambda _, params: _copy(params, "StreamArn", "TableName"),
    "cloudwatch": lambda _, params: _copy(params, "Namespace"),
    "sts": lambda _, params: _copy(params, "RoleArn"),
    "kinesis": lambda _, params: _copy(params, "StreamName", "StreamARN", "ConsumerARN"),
}


def identify(service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that decide which resources (and condition keys) the call's authorization names: tables
    (and the tables of batches and transactions), bucket and key prefix, queue name, function, mapping, parameter
    names, stream, metric namespace. Other services' calls keep none."""
    by_service = _BY_SERVICE.get(service)
    return by_service(operation, params) if by_service is not None else {}


def outcome(status: int, parsed: Mapping[str, Any] | None) -> str:
    """``ok``, or the error code AWS answered (the HTTP status when it named none)."""
    if status < 300:
        return "ok"
    error = (parsed or {}).get("Error") or {}
    return str(error.get("Code") or status)


# -- the recorder ----------------------------------------------------------------------------------------------
class CallRecorder:
    """Appends each distinct call once to ``<directory>/calls-<pid>.jsonl`` (thread-safe)."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self._pid = 0

    def record(self, service: str, operation: str, params: Mapping[str, Any], result: str) -> None:
        line = json.dumps({"function": current_function(), "service": service, "operation": operation,
                           "params": identify(service, operation, params), "outcome": result}, sort_keys=True)
        with self._lock:
            if os.getpid() != self._pid:  # a forked child starts its own file
                self._pid, self._seen = os.getpid(), set()
            if line in self._seen:
                return
            self._seen.add(line)
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(self.directory / f"calls-{self._pid}.jsonl", "a", encoding="utf-8") as out:
                out.write(line + "\n")


class _Installed:
    recorder: CallRecorder | None = None
    resolved = False


def recorder() -> CallRecorder | None:
    """The process's recorder: set up on first use from METRO_IAM_RECORD (None when it is unset)."""
    if not _Installed.resolved:
        directory = iam_record_dir()
        _Installed.recorder = CallRecorder(directory) if directory else None
        _Installed.resolved = True
    return _Installed.recorder


def install(directory: str | None) -> None:
    """Record into ``directory`` from now on (None: stop recording); tests and tools use it."""
    _Installed.recorder = CallRecorder(directory) if directory else None
    _Installed.resolved = True


def record(service: str, operation: str, params: Mapping[str, Any], status: int,
           parsed: Mapping[str, Any] | None) -> None:
    """Record one call if recording is on; never raises."""
    try:
        rec = recorder()
        if rec is not None:
            rec.record(service, operation, params, outcome(status, parsed))
    except Exception:  # the recorder must never fail a request
        pass


def record_error(service: str, operation: str, params: Mapping[str, Any], exception: BaseException | None) -> None:
    """Record a call that raised before AWS answered (a connection error): its outcome is the exception's name."""
    try:
        rec = recorder()
        if rec is not None:
            rec.record(service, operation, params, type(exception).__name__ if exception else "error")
    except Exception:
        pass
