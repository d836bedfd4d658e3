"""boto3 clients, built once per process from configuration, with botocore's own retry mode.

Every client carries three cheap event handlers that feed an opt-in request counter (the benchmark
installs one with :func:`count_requests`; without one they return at once). Requests are counted
where they leave botocore, by *part* (a per-thread label the caller sets with :func:`set_part`,
for example ``api:publish``, ``fanout`` or ``pump``), service and operation: calls, HTTP attempts
(retries included), errors, and whatever billing units an optional meter derives from the call's
parameters and parsed response.

The same handlers feed the opt-in IAM call recorder (store/call_record.py, ``METRO_IAM_RECORD``): every
distinct call, by acting function, for the IAM conformance gate of ``make test`` (infra/iam_gate.py).

Stores take their clients from the typed accessors (:func:`dynamodb`, :func:`dynamodb_streams`, :func:`s3`,
:func:`sqs`, :func:`lambda_`), so mypy checks every call against the pinned mypy-boto3 stubs; the stubs are
needed by the type checker only. :func:`client` is the untyped form, for tools and tests.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import boto3
from botocore import useragent
from botocore.client import BaseClient
from botocore.config import Config as BotoConfig

from chalicelib.config import Config
from chalicelib.store import call_record

if TYPE_CHECKING:  # the stubs are a development dependency; nothing needs them at run time
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

    Item = dict[str, AttributeValueTypeDef]  # a DynamoDB item (or key) in the low-level client's form

# (service id, operation, API parameters, parsed response) -> billing units, e.g. {"wu": 1.0}
Meter = Callable[[str, str, Mapping[str, Any], Mapping[str, Any]], Mapping[str, float]]
Key = tuple[str, str, str]  # (part, service id, operation)

ClientT = TypeVar("ClientT", bound=BaseClient)
P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_PART = "other"
_PARAMS = "metro_counted_params"
_STARTED = "metro_counted_started"


@dataclass
class Tally:
    calls: int = 0
    attempts: int = 0
    errors: int = 0
    units: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0  # summed wall time of the calls, parameters to parsed response

    def add(self, other: Tally) -> None:
        self.calls += other.calls
        self.attempts += other.attempts
        self.errors += other.errors
        self.seconds += other.seconds
        for k, v in other.units.items():
            self.units[k] = self.units.get(k, 0.0) + v


class RequestCounter:
    """Thread-safe counts of AWS requests by (part, service, operation)."""

    def __init__(self, meter: Meter | None = None) -> None:
        self._meter = meter
        self._lock = threading.Lock()
        self._tallies: dict[Key, Tally] = {}

    def _tally(self, key: Key) -> Tally:
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally()
        return tally

    def attempt(self, service: str, operation: str) -> None:
        with self._lock:
            self._tally((current_part(), service, operation)).attempts += 1

    def call(self, service: str, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any],
             failed: bool, seconds: float = 0.0) -> None:
        units: Mapping[str, float] = {}
        if self._meter is not None:
            try:
                units = self._meter(service, operation, params, parsed)
            except Exception:  # a meter bug must never break a request
                units = {"meter_errors": 1.0}
        with self._lock:
            tally = self._tally((current_part(), service, operation))
            tally.calls += 1
            tally.errors += int(failed)
            tally.seconds += seconds
            for k, v in units.items():
                tally.units[k] = tally.units.get(k, 0.0) + v

    def snapshot(self) -> dict[Key, Tally]:
        """A copy of the counts so far (subtract two snapshots to measure a window)."""
        with self._lock:
            return {k: Tally(t.calls, t.attempts, t.errors, dict(t.units), t.seconds) for k, t in self._tallies.items()}

    def reset(self) -> None:
        with self._lock:
            self._tallies.clear()


class _Installed:
    """The process-wide request counter (None: counting is off)."""

    counter: RequestCounter | None = None


_local = threading.local()


def count_requests(counter: RequestCounter | None) -> None:
    """Install (or, with None, remove) the process-wide request counter."""
    _Installed.counter = counter


def current_part() -> str:
    return str(getattr(_local, "part", DEFAULT_PART))


def set_part(part: str) -> str:
    """Label this thread's AWS requests with ``part``; returns the previous label."""
    previous = current_part()
    _local.part = part
    return previous


@contextmanager
def part(label: str) -> Iterator[None]:
    previous = set_part(label)
    try:
        yield
    finally:
        set_part(previous)


def in_callers_part(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap ``fn`` to run, on whichever thread, under the calling thread's part label and acting function
    (call_record.acting_as; for thread pools)."""
    label = current_part()
    acting = call_record.carry(fn)

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with part(label):
            return acting(*args, **kwargs)

    return run


def _names(event_name: str) -> tuple[str, str]:
    _, service, operation = event_name.split(".", 2)
    return service, operation


def _elapsed(context: dict[str, Any]) -> float:
    started = context.get(_STARTED)
    return time.perf_counter() - started if started is not None else 0.0


def _on_params(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
    if _Installed.counter is not None or call_record.recorder() is not None:
        context[_PARAMS] = params
        context[_STARTED] = time.perf_counter()


def _on_send(event_name: str, **_: Any) -> None:
    counter = _Installed.counter
    if counter is not None:
        counter.attempt(*_names(event_name))
    # returning None lets botocore send the request


def _on_after_call(event_name: str, http_response: Any, parsed: Mapping[str, Any], context: dict[str, Any],
                   **_: Any) -> None:
    counter = _Installed.counter
    status = getattr(http_response, "status_code", 200)
    if counter is not None:
        counter.call(*_names(event_name), context.get(_PARAMS, {}), parsed or {}, status >= 300, _elapsed(context))
    if _PARAMS in context:  # the IAM call recorder (call_record.py), when METRO_IAM_RECORD is set
        call_record.record(*_names(event_name), context[_PARAMS], status, parsed)


def _on_call_error(event_name: str, context: dict[str, Any], exception: BaseException | None = None,
                   **_: Any) -> None:
    counter = _Installed.counter
    if counter is not None:
        counter.call(*_names(event_name), context.get(_PARAMS, {}), {}, True, _elapsed(context))
    if _PARAMS in context:
        call_record.record_error(*_names(event_name), context[_PARAMS], exception)


_extra_handlers: list[tuple[str, Callable[..., Any]]] = []


def register_handler(event: str, handler: Callable[..., Any]) -> None:
    """Attach ``handler`` to ``event`` on every client built from now on (local fault injection uses it)."""
    _extra_handlers.append((event, handler))
    _client.cache_clear()


def instrument(client: ClientT) -> ClientT:
    """Attach the counting handlers (and any registered handler) to a client (done for every client built here)."""
    events = client.meta.events
    events.register("before-parameter-build", _on_params)
    events.register("before-send", _on_send)
    events.register("after-call", _on_after_call)
    events.register("after-call-error", _on_call_error)
    for event, handler in _extra_handlers:
        events.register(event, handler)
    return client


def _memoize_user_agent_sanitizer() -> None:
    """botocore rebuilds each request's User-Agent header, sanitizing every component character by character in
    Python (a tenth of a local publish's client CPU). The sanitizer is a pure function of its arguments, and the
    components repeat from request to request: memoized, each string is sanitized once (same header, same bytes)."""
    module: Any = useragent
    if not hasattr(module.sanitize_user_agent_string_component, "cache_info"):
        module.sanitize_user_agent_string_component = functools.lru_cache(maxsize=4096)(
            module.sanitize_user_agent_string_component)


_memoize_user_agent_sanitizer()


@functools.cache
def _session() -> boto3.session.Session:
    return boto3.session.Session()


def client(service: str, config: Config) -> Any:
    """The process's client of ``service``, untyped (stores use the typed accessors below)."""
    return _client(service, config.region, config.endpoint_url)


def dynamodb(config: Config) -> DynamoDBClient:
    return cast("DynamoDBClient", _client("dynamodb", config.region, config.endpoint_url))


def dynamodb_streams(config: Config) -> DynamoDBStreamsClient:
    return cast("DynamoDBStreamsClient", _client("dynamodbstreams", config.region, config.endpoint_url))


def s3(config: Config) -> S3Client:
    return cast("S3Client", _client("s3", config.region, config.endpoint_url))


def sqs(config: Config) -> SQSClient:
    return cast("SQSClient", _client("sqs", config.region, config.endpoint_url))


def lambda_(config: Config) -> LambdaClient:
    return cast("LambdaClient", _client("lambda", config.region, config.endpoint_url))


def quick_client(service: str, config: Config) -> Any:
    """A client of ``service`` that tries once, within seconds: for probes (store/health.py), which must answer
    fast whether AWS answers, not wait through retries."""
    return _client(service, config.region, config.endpoint_url, quick=True)


@functools.cache
def _client(service: str, region: str, endpoint_url: str | None, quick: bool = False) -> BaseClient:
    boto_config = BotoConfig(
        retries={"mode": "standard", "max_attempts": 1 if quick else 5},
        max_pool_connections=8 if quick else 64,
        connect_timeout=2 if quick else 5,
        read_timeout=3 if quick else 30,
        tcp_keepalive=True,
    )
    session: Any = _session()  # the stubs type client() per literal service name only
    built: BaseClient = session.client(service, region_name=region, endpoint_url=endpoint_url, config=boto_config)
    return instrument(built)


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints between runs)."""
    _client.cache_clear()
    _session.cache_clear()
