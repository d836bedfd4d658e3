"""The container's cap on open StreamingPulls (chalicelib/container/streams.py): a stream beyond the cap ends
UNAVAILABLE at once, a closed stream frees its place, other methods pass untouched."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from chalicelib.container.streams import STREAMING_PULL, StreamLimit


class Aborted(Exception):
    pass


class Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)  # as grpc's abort does: it raises


def responses(requests: Iterator[Any], context: Any) -> Iterator[int]:
    yield 1
    yield 2


def test_a_stream_beyond_the_cap_ends_unavailable_and_a_closed_one_frees_its_place() -> None:
    limit = StreamLimit(2)
    handler = grpc.stream_stream_rpc_method_handler(responses)
    wrapped = limit.intercept_service(lambda details: handler, SimpleNamespace(method=STREAMING_PULL))
    first, second = (wrapped.stream_stream(iter(()), Context()) for _ in range(2))
    assert (next(first), next(second), limit.open) == (1, 1, 2)
    with pytest.raises(Aborted) as refused:
        next(wrapped.stream_stream(iter(()), Context()))
    assert refused.value.args[0] == grpc.StatusCode.UNAVAILABLE and "2 open streams" in refused.value.args[1]
    assert limit.open == 2
    first.close()  # the client went away (the server drops the response iterator)
    assert limit.open == 1
    assert list(second) == [2] and limit.open == 0  # a stream that ends frees its place too
    third = wrapped.stream_stream(iter(()), Context())
    assert next(third) == 1 and limit.open == 1


def test_other_methods_are_not_counted() -> None:
    limit = StreamLimit(1)
    unary = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    for method in ("/google.pubsub.v1.Publisher/Publish", "/grpc.health.v1.Health/Check"):
        assert limit.intercept_service(lambda details: unary, SimpleNamespace(method=method)) is unary
    assert limit.intercept_service(lambda details: None, SimpleNamespace(method=STREAMING_PULL)) is None
