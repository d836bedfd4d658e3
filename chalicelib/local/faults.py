"""Fault injection for the local stack: ``METRO_FAULT_RATE=0.05 make run`` makes 5% of this process's AWS
requests fail, as AWS sometimes does, so that the retry and recovery paths run (``make chaos`` uses it).

A botocore ``before-send`` handler on every client (:func:`chalicelib.store.aws.register_handler`) draws
for each HTTP attempt; a faulty attempt is one of four kinds, equally often:

- ``throttle``: the service's throttling error (DynamoDB/SQS ``ThrottlingException``, S3 ``SlowDown``);
- ``server_error``: an HTTP 500 ``InternalError``;
- ``timeout_before``: a read timeout, the request never reached the emulator;
- ``timeout_after``: the request is sent and served, then the answer is lost (a read timeout): a write
  happened although the caller saw it fail, the harshest case for idempotency.

botocore's retries (standard mode, chalicelib/store/aws.py) see these like real faults. Never in AWS mode.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections import Counter
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session

from chalicelib.store import aws

log = logging.getLogger("metro.faults")
KINDS = ("throttle", "server_error", "timeout_before", "timeout_after")
REPORT_EVERY = 50  # a log line with the running counts every so many attempts
XML_SERVICES = ("s3",)  # rest-xml; the others Metro calls speak JSON


def choose(draw: float, pick: float, rate: float) -> str | None:
    """The fault for an attempt whose two uniform draws in [0, 1) are ``draw`` and ``pick`` (None: no fault)."""
    if draw >= rate:
        return None
    return KINDS[min(int(pick * len(KINDS)), len(KINDS) - 1)]


def error_response(service: str, kind: str) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the injected error answer of ``service`` (throttle or server_error)."""
    throttle = kind == "throttle"
    if service in XML_SERVICES:
        code, status = ("SlowDown", 503) if throttle else ("InternalError", 500)
        body = f"<Error><Code>{code}</Code><Message>injected fault</Message></Error>".encode()
        return status, {"Content-Type": "application/xml"}, body
    code, status = ("ThrottlingException", 400) if throttle else ("InternalFailure", 500)
    body = json.dumps({"__type": code, "message": "injected fault"}).encode()
    return status, {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": code}, body


class _Raw:
    """The minimal raw body AWSResponse reads from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> list[bytes]:
        return [self._body]


class FaultInjector:
    """The ``before-send`` handler: fails ``rate`` of the attempts; ``counts`` says how many of each kind."""

    def __init__(self, rate: float, rng: random.Random | None = None) -> None:
        self.rate = rate
        self.attempts = 0
        self.counts: Counter[str] = Counter()
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._http = URLLib3Session()

    def _draw(self) -> str | None:
        with self._lock:
            self.attempts += 1
            kind = choose(self._rng.random(), self._rng.random(), self.rate)
            if kind:
                self.counts[kind] += 1
            if self.attempts % REPORT_EVERY == 0:
                log.warning("fault injection: %d attempts, %d faults %s", self.attempts, sum(self.counts.values()),
                         json.dumps(dict(self.counts), sort_keys=True))
            return kind

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        kind = self._draw()
        if kind is None:
            return None
        if kind == "timeout_after":
            self._http.send(request)  # served; the answer is dropped
        if kind.startswith("timeout"):
            raise ReadTimeoutError(endpoint_url=request.url)
        service = event_name.split(".")[1]
        status, headers, body = error_response(service, kind)
        raw_headers: Any = headers  # AWSResponse copies any mapping into its HeadersDict
        return AWSResponse(request.url, status, raw_headers, _Raw(body))


def install(rate: float) -> FaultInjector | None:
    """Inject faults into ``rate`` of this process's AWS requests (0: none; returns the injector)."""
    if rate <= 0:
        return None
    injector = FaultInjector(rate)
    aws.register_handler("before-send", injector)
    log.warning("fault injection on: %.1f%% of AWS requests fail (throttling, 500s, timeouts)", rate * 100)
    return injector
