"""The embedded AWS emulator: moto's WSGI application, behind the durable recorder when the stack keeps its state
(METRO_DATA_DIR, docs/local-state.md), served over HTTP for every other process (Spark jobs, the AWS CLI) and
called in process by Metro's own clients (chalicelib/local/inprocess.py)."""

from __future__ import annotations

import threading
from importlib import metadata
from typing import Any

from chalicelib.local.durable.data_dir import DataDir
from chalicelib.local.durable.recorder import DurableEmulator, Restored, data_path
from chalicelib.local.wsgi import WsgiApp


def _production_app(create: Any) -> Any:
    """moto's per-service Flask application without Flask's debug mode, which adds a form-encoding check to every
    request (an error still answers 500, without the debugger)."""

    def create_app(service: Any) -> Any:
        app = create(service)
        app.debug = False
        return app

    return create_app


class EmulatorServer:
    """What moto's ThreadedMotoServer does, with the application reachable (``app``) and, given a directory, the
    state kept there."""

    def __init__(self, host: str, port: int, directory: str = "", sync: bool = False,
                 snapshot_bytes: int = 0) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        self._host, self._port = host, port
        moto_app = DomainDispatcherApplication(_production_app(create_backend_app))
        self.durable: DurableEmulator | None = None
        self.app: WsgiApp = moto_app
        if directory:
            data = DataDir(data_path(directory), sync)
            self.durable = DurableEmulator(moto_app, data, metadata.version("moto"), snapshot_bytes)
            self.app = self.durable
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> Restored | None:
        from moto.moto_server.werkzeug_app import MotoRequestHandler
        from werkzeug.serving import make_server

        restored = self._restore() if self.durable is not None else None
        self._server = make_server(self._host, self._port, self.app, True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-emulator", daemon=True)
        self._thread.start()
        return restored

    def _restore(self) -> Restored:
        assert self.durable is not None
        try:
            r = self.durable.restore()
        except BaseException:
            self.durable.abandon()
            raise
        print(f"Metro state in {self.durable.directory}: " + (
            f"snapshot {r.snapshot_generation}, " if r.snapshot_generation is not None else "no snapshot, ")
            + f"{r.replayed} calls replayed in {r.seconds:.2f} s", flush=True)
        return r

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        if self.durable is not None:
            self.durable.close()
