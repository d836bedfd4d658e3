"""The unary RPCs: each transcoded into the REST call it is (api/rpc/transcoding.py) and run by the same
dispatch (api/routes.execute). Acknowledgements and nacks also free room on the StreamingPull that handed the
messages out (api/rpc/outstanding.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import grpc
from google.protobuf.message import Message

from chalicelib.api.auth import credentials
from chalicelib.api.routes import execute
from chalicelib.api.rpc.outstanding import Outstanding
from chalicelib.api.rpc.status import status_of
from chalicelib.api.rpc.transcoding import RPCS, Rpc, call_of, response_of
from chalicelib.core.errors import MetroError

log = logging.getLogger("metro.grpc")
BY_NAME: Mapping[str, Rpc] = {rpc.name: rpc for rpc in RPCS if rpc.service != "google.iam.v1.IAMPolicy"}
IAM: Mapping[str, Rpc] = {rpc.name: rpc for rpc in RPCS if rpc.service == "google.iam.v1.IAMPolicy"}


def token_of(context: grpc.ServicerContext) -> str:
    """The token in the call's metadata: ``authorization: Bearer ...`` or ``x-api-key`` (as on REST)."""
    metadata = {k.lower(): v for k, v in context.invocation_metadata() if isinstance(v, str)}
    return credentials(metadata, {})


def run(rpc: Rpc, request: Message, token: str) -> dict[str, Any]:
    """The JSON answer of an RPC's REST call; raises MetroError."""
    answer = execute(call_of(rpc, request, token))
    wire = answer.to_wire() if hasattr(answer, "to_wire") else answer
    return wire if isinstance(wire, dict) else {}


def abort(context: grpc.ServicerContext, error: MetroError) -> NoReturn:
    context.abort_with_status(status_of(error))
    raise AssertionError("abort_with_status returned")  # it raises


def unexpected(context: grpc.ServicerContext) -> NoReturn:
    log.exception("unhandled error in a gRPC call")
    context.abort(grpc.StatusCode.INTERNAL, "Internal error; the request may be retried.")
    raise AssertionError("abort returned")  # it raises


def _settled(rpc: Rpc, request: Message) -> list[str]:
    """The ack ids an Acknowledge or a nack (ModifyAckDeadline to 0) settles."""
    fields: Any = request
    if rpc.name == "Acknowledge" or (rpc.name == "ModifyAckDeadline" and fields.ack_deadline_seconds == 0):
        return list(fields.ack_ids)
    return []


def unary(rpc: Rpc, outstanding: Outstanding) -> Callable[[Message, grpc.ServicerContext], Message]:
    def serve(request: Message, context: grpc.ServicerContext) -> Message:
        try:
            settled = _settled(rpc, request)
            try:
                answer = run(rpc, request, token_of(context))
            finally:
                if settled:  # failed ids are done with too: they will not be acknowledged again
                    outstanding.settle(settled)
            return response_of(rpc, answer)
        except MetroError as error:
            abort(context, error)
        except Exception:
            unexpected(context)
    return serve


def method_handlers(rpcs: Mapping[str, Rpc], outstanding: Outstanding) -> dict[str, grpc.RpcMethodHandler]:
    return {name: grpc.unary_unary_rpc_method_handler(unary(rpc, outstanding),
                                                       request_deserializer=rpc.request.FromString,
                                                       response_serializer=lambda m: m.SerializeToString())
            for name, rpc in rpcs.items()}
