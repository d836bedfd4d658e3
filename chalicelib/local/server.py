"""The embedded stack: AWS emulator, bootstrap, Chalice app over HTTP, trigger pump."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from http import HTTPStatus
from pathlib import Path
from typing import Any

from chalice.config import Config as ChaliceConfig
from chalice.local import (
    ChaliceRequestHandler,
    CustomLocalChalice,
    ForbiddenError,
    LocalChalice,
    LocalDevServer,
    LocalGatewayException,
)

from chalicelib import config as metro_config
from chalicelib import runtime
from chalicelib.core.errors import InvalidArgument, MetroError, NotFound
from chalicelib.delivery import event_handlers as handlers
from chalicelib.local import faults, grpc_edge
from chalicelib.local.bootstrap import bootstrap
from chalicelib.local.declare import apply_at_start
from chalicelib.local.emulator import EmulatorServer
from chalicelib.local.export_pump import ExportPump
from chalicelib.local.ingest_pump import IngestPump
from chalicelib.local.inprocess import InProcessTransport
from chalicelib.local.invoke_pump import InvokePump
from chalicelib.local.moto_fixes import fix_moto
from chalicelib.local.moto_speedups import speed_up_moto
from chalicelib.local.probe import listening as _listening
from chalicelib.local.pump import StreamPump
from chalicelib.local.push_pump import PushPump
from chalicelib.local.schedule import Schedule
from chalicelib.store import aws

log = logging.getLogger("metro.local")


class RequestHandler(ChaliceRequestHandler):
    """Chalice's local handler, with Google's 404 for unknown URLs and quiet access logs; a connection that
    opens with the HTTP/2 preface goes to the gRPC server (chalicelib/local/grpc_edge.py)."""

    grpc_port: int | None = None  # set when the stack serves gRPC
    serves_grpc = True  # the plain-HTTP port only: the AMS dialect's TLS port never sees a preface in clear
    # An answer leaves in one send: http.server writes its head and Chalice its body separately, and through the
    # unbuffered writer (wbufsize 0) each write was a send. A body sent after an unacknowledged head waited for
    # the client's delayed acknowledgement (Nagle's algorithm): ~44 ms per request on a kept-alive connection.
    # The buffer gathers head and body; http.server flushes it once per request (handle_one_request, finish).
    wbufsize = 64 * 1024  # a larger answer leaves in two sends: TCP_NODELAY (handle) keeps that from waiting

    def handle(self) -> None:
        # And no answer waits for an acknowledgement, whatever its writes (docs/decisions/local-http-one-send.md).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.serves_grpc and grpc_edge.opens_http2(self.connection):
            if self.grpc_port:
                grpc_edge.splice(self.connection, self.grpc_port)
            else:
                grpc_edge.refuse_http2(self.connection)
            self.close_connection = True
            return
        super().handle()

    def handle_expect_100(self) -> bool:
        answered = bool(super().handle_expect_100())
        self.wfile.flush()  # the client waits for "100 Continue" before it sends the body: not held in the buffer
        return answered

    def _send_error_response(self, error: LocalGatewayException) -> None:
        if isinstance(error, ForbiddenError):  # API Gateway's answer to an unknown route
            body = json.dumps(NotFound(f"The requested URL {self.path} was not found.").to_wire()).encode()
            self._send_http_response(404, {"Content-Type": "application/json"}, body)
            return
        super()._send_error_response(error)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals in Google's envelope, not its HTML page: a method no route serves (501
        there, e.g. TRACE) is NOT_FOUND as an unknown (method, verb) is (api/routes.py); a request it cannot
        parse (a bad request line, headers too long) is INVALID_ARGUMENT."""
        command, path = getattr(self, "command", None) or "", getattr(self, "path", "")
        error: MetroError = NotFound(f"The requested URL {command} {path} was not found.") \
            if code == HTTPStatus.NOT_IMPLEMENTED else InvalidArgument(f"Bad request: {message or code}")
        body = json.dumps(error.to_wire()).encode()
        self.close_connection = True  # what follows on this connection cannot be trusted
        self.send_response(error.http_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)


def start_emulator(host: str, port: int) -> EmulatorServer:
    """Start moto's server in this process, speaking the real AWS wire protocols; with METRO_DATA_DIR, its state
    survives restarts (docs/local-state.md)."""
    fix_moto()  # always: a correctness fix (local/moto_fixes.py)
    local = metro_config.LocalConfig()
    if local.moto_speedup:
        speed_up_moto()
    server = EmulatorServer(host, port, local.data_dir, local.data_sync, local.snapshot_bytes)
    server.start()
    return server


def prepare_environment(use_aws: bool) -> EmulatorServer | None:
    """Point boto3 at the emulator (starting one if needed); returns the emulator or None."""
    local = metro_config.LocalConfig()
    if use_aws:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        return None
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ["AWS_ACCOUNT_ID_ENDPOINT_MODE"] = "disabled"
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and _listening(endpoint):
        log.info("using the AWS endpoint already running at %s", endpoint)
        return None
    emulator = start_emulator("127.0.0.1", local.emulator_port)
    os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{local.emulator_port}"
    aws.reset_clients()
    return emulator


class Stack:
    def __init__(self, use_aws: bool = False) -> None:
        self.emulator = prepare_environment(use_aws)
        self.config = metro_config.load()
        self.local = metro_config.LocalConfig()
        if not use_aws:  # METRO_FAULT_RATE: injected AWS faults, never against real AWS
            faults.install(self.local.fault_rate)
        if self.emulator is not None and self.local.inprocess:  # after the faults: they still fail requests first
            aws.register_handler("before-send", InProcessTransport(self.emulator.app, os.environ["AWS_ENDPOINT_URL"]))
        bootstrap(self.config)
        runtime.services()  # refuses to start on a missing or built-in secret (docs/security.md)
        apply_at_start(self.local, runtime.services())  # METRO_INIT, PUBSUB_PROJECT1..N (docs/init.md)
        self.pump = StreamPump(self.config, handlers.fanout, interval=self.local.pump_interval)
        self.push_pump = PushPump(self.config, handlers.push, refresh=self.local.push_refresh)
        self.export_pump = ExportPump(self.config, handlers.export, refresh=self.local.push_refresh)
        self.ingest_pump = IngestPump(self.config, handlers.ingest, handlers.ingest_scan)
        self.schedule = Schedule(handlers.maintenance, self.local.maintenance_interval)
        self.sweep = Schedule(handlers.dead_letter_sweep, self.local.dead_letter_sweep_interval, "dead-letter-sweep")
        self.invocations = InvokePump(lambda: runtime.services().ctx.invoker.pending,
                                      {"seek_worker": handlers.seek_worker, "fanout": handlers.fanout})
        from app import app  # imported late: the app reads configuration when first used

        # As `chalice local` does: make current_request thread-local, since requests run concurrently.
        CustomLocalChalice.__bases__ = (LocalChalice, app.__class__)
        app.__class__ = CustomLocalChalice
        self.server = LocalDevServer(app, ChaliceConfig(chalice_stage="local"), self.local.host, self.local.port,
                                     handler_cls=RequestHandler)
        from chalicelib.local.ams_server import ams_server
        from chalicelib.local.tls import ensure_certificate

        self.ams_cert, ams_key = ensure_certificate(Path(self.local.ams_cert_dir).resolve())
        self.ams = ams_server(app, self.local.host, self.local.ams_port, self.ams_cert, ams_key)
        self.grpc = grpc_edge.start_grpc_server() if self.local.grpc else None
        RequestHandler.grpc_port = self.grpc[1] if self.grpc is not None else None

    def serve(self) -> None:
        self.pump.start()
        self.push_pump.start()
        self.export_pump.start()
        self.ingest_pump.start()
        self.schedule.start()
        self.sweep.start()
        threading.Thread(target=self.ams.server.serve_forever, kwargs={"poll_interval": 0.2}, name="ams",
                         daemon=True).start()
        print(f"Metro AMS dialect on https://{self.local.host}:{self.local.ams_port} (certificate: {self.ams_cert})",
              flush=True)
        self.invocations.start()
        endpoint = self.config.endpoint_url or "AWS"
        auth = "open: every caller is service_admin" if self.config.auth_mode == "open" else "keys required"
        grpc = "and gRPC" if self.grpc is not None else "(gRPC not served)"
        print(f"Metro listening on http://{self.local.host}:{self.local.port} {grpc} (AWS: {endpoint}; auth: {auth})",
              flush=True)
        self.server.server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        self.pump.stop()
        self.push_pump.stop()
        self.export_pump.stop()
        self.ingest_pump.stop()
        self.schedule.stop()
        self.sweep.stop()
        self.invocations.stop()
        threading.Thread(target=self.server.shutdown, daemon=True).start()
        threading.Thread(target=self.ams.shutdown, daemon=True).start()
        self.server.server.server_close()
        self.ams.server.server_close()
        if self.grpc is not None:
            self.grpc[0].stop(grace=None)  # open streams end UNAVAILABLE: clients reconnect
        if self.emulator is not None:
            self.emulator.stop()
