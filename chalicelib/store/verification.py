"""AMS's push endpoint verification: GET ``{scheme}://{host[:port]}/ams_verification_hash`` of a push
endpoint with the checked HTTP client (store/http_client.py), connecting only to the addresses the endpoint
rules checked (core/access/endpoints.py) and never to Metro's own ports.

The whole exchange (resolution, connect, TLS handshake, request, answer) has one deadline, counted on an
injectable clock: every socket operation gets the time left as its timeout, so an endpoint that trickles
its answer is cut off when the deadline passes. The answer is bounded too: at most 16 KiB of status line and
headers (store/http_answer.py) and ``MAX_ANSWER_BYTES`` of body are kept.
"""

from __future__ import annotations

import time

from chalicelib.core.access.endpoints import parse_push_endpoint, refuse_reserved
from chalicelib.core.wire.ams import VERIFICATION_PATH
from chalicelib.store import http_client
from chalicelib.store.http_answer import AnswerError, Clock, Deadline
from chalicelib.store.resolver import EndpointResolver, reserved

MAX_ANSWER_BYTES = 4096


def verification_url(push_endpoint: str) -> str:
    endpoint = parse_push_endpoint(push_endpoint)
    return f"{endpoint.scheme}://{endpoint.host_header}{VERIFICATION_PATH}"


def fetch_verification_hash(resolver: EndpointResolver, push_endpoint: str, timeout: float = 5.0,
                            clock: Clock = time.monotonic) -> tuple[int, str]:
    """(status, body) of the endpoint's verification route; (0, reason) when it gave no usable answer within
    ``timeout`` seconds. InvalidArgument for an endpoint Metro may not reach."""
    deadline = Deadline.after(timeout, clock)
    target = refuse_reserved(resolver.check(verification_url(push_endpoint), timeout), reserved(resolver.config))
    try:
        status, body = http_client.get(target, {"Accept": "*/*"}, deadline, MAX_ANSWER_BYTES)
    except AnswerError as exc:
        return 0, str(exc)
    except TimeoutError:
        return 0, f"no answer within {timeout:g}s"
    except (OSError, ValueError) as exc:
        return 0, type(exc).__name__
    return status, body.decode("utf-8", "replace").strip()
