"""The gRPC services Metro serves, as handlers a ``grpc.Server`` takes: every unary RPC of the transcoding
table, grouped by service, and Subscriber's StreamingPull."""

from __future__ import annotations

from collections import defaultdict

import grpc

from chalicelib.api.rpc import descriptors
from chalicelib.api.rpc.outstanding import Outstanding
from chalicelib.api.rpc.streaming import StreamingPull, StreamingPullRequest
from chalicelib.api.rpc.transcoding import RPCS, SUBSCRIBER, Rpc
from chalicelib.api.rpc.unary import method_handlers

SERVICE_NAMES = tuple(sorted({rpc.service for rpc in RPCS}))


def generic_handlers(outstanding: Outstanding | None = None) -> list[grpc.GenericRpcHandler]:
    descriptors.register()  # so that server reflection can describe the services, not only list them
    shared = outstanding or Outstanding()
    by_service: dict[str, dict[str, Rpc]] = defaultdict(dict)
    for rpc in RPCS:
        by_service[rpc.service][rpc.name] = rpc
    handlers = []
    for service, rpcs in sorted(by_service.items()):
        methods = method_handlers(rpcs, shared)
        if service == SUBSCRIBER:
            methods["StreamingPull"] = grpc.stream_stream_rpc_method_handler(
                StreamingPull(shared), request_deserializer=StreamingPullRequest.FromString,
                response_serializer=lambda m: m.SerializeToString())
        handlers.append(grpc.method_handlers_generic_handler(service, methods))
    return handlers
