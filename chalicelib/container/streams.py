"""A cap on the StreamingPulls one process holds open, below its thread pool.

An open StreamingPull holds a thread of the server's pool for as long as it is open (and a thread of its own that
reads its requests). Once streams fill the pool, no other call is served: unary calls and the load balancer's health
checks wait in the pool's queue until their deadline, the target turns unhealthy, and ECS replaces the task, which
cuts every stream it held. So the container refuses a stream beyond ``limit`` at once, UNAVAILABLE (which
google-cloud-pubsub's subscriber retries with backoff, through the load balancer to any task), and keeps the rest of
the pool for unary calls and health checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc

STREAMING_PULL = "/google.pubsub.v1.Subscriber/StreamingPull"


class StreamLimit(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc has no type hints
    """At most ``limit`` StreamingPulls open at once; the count of those open."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open = 0
        self._lock = threading.Lock()

    @property
    def open(self) -> int:
        with self._lock:
            return self._open

    def _enter(self) -> bool:
        with self._lock:
            if self._open >= self.limit:
                return False
            self._open += 1
            return True

    def _leave(self) -> None:
        with self._lock:
            self._open -= 1

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or details.method != STREAMING_PULL or handler.stream_stream is None:
            return handler
        return grpc.stream_stream_rpc_method_handler(self._limited(handler.stream_stream),
                                                     request_deserializer=handler.request_deserializer,
                                                     response_serializer=handler.response_serializer)

    def _limited(self, serve: Callable[[Iterator[Any], Any], Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def limited(requests: Iterator[Any], context: Any) -> Iterator[Any]:
            if not self._enter():
                context.abort(grpc.StatusCode.UNAVAILABLE,
                              f"This server holds {self.limit} open streams, its most; retry (another server may "
                              "take it).")
            try:
                yield from serve(requests, context)
            finally:
                self._leave()
        return limited
