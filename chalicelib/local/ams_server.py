"""The AMS dialect's local endpoint: the same Chalice app over HTTPS, every request marked with the stage
variable that selects the dialect (chalicelib/api/dialect.py), as the deployed AMS stage does."""

from __future__ import annotations

import ssl
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from chalice.app import Chalice
from chalice.config import Config as ChaliceConfig
from chalice.local import LambdaEventConverter, LocalDevServer, LocalGateway, RouteMatcher

from chalicelib.api.dialect import STAGE_VARIABLE, Dialect
from chalicelib.local.server import RequestHandler


class AmsEventConverter(LambdaEventConverter):
    """Builds API Gateway events as the deployed AMS stage does: with its stage variable."""

    def create_lambda_event(self, method: str, path: str, headers: dict[str, str],
                            body: bytes | None = None) -> dict[str, Any]:
        event: dict[str, Any] = super().create_lambda_event(method, path, headers, body)
        event["stageVariables"] = {STAGE_VARIABLE: Dialect.AMS.value}
        return event


class AmsRequestHandler(RequestHandler):
    serves_grpc = False

    def __init__(self, request: bytes, client_address: tuple[str, int], server: HTTPServer, app_object: Chalice,
                 config: ChaliceConfig) -> None:
        self.local_gateway = LocalGateway(app_object, config)
        self.local_gateway.event_converter = AmsEventConverter(RouteMatcher(list(app_object.routes)),
                                                               app_object.api.binary_types)
        BaseHTTPRequestHandler.__init__(self, request, client_address, server)  # type: ignore[arg-type]


def ams_server(app: Chalice, host: str, port: int, cert: Path, key: Path) -> LocalDevServer:
    """A LocalDevServer for ``app`` on ``host:port`` speaking TLS with the given certificate."""
    server = LocalDevServer(app, ChaliceConfig(chalice_stage="local"), host, port, handler_cls=AmsRequestHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    # The handshake happens in the connection's own thread, so a slow client cannot hold up accept().
    server.server.socket = context.wrap_socket(server.server.socket, server_side=True, do_handshake_on_connect=False)
    return server
