"""The emulator's server when the stack keeps its state (METRO_DATA_DIR): moto's application behind the durable
recorder, restored before it answers its first call."""

from __future__ import annotations

import logging
import threading
from importlib import metadata
from typing import Any

from chalicelib.local.durable.data_dir import DataDir
from chalicelib.local.durable.recorder import DurableEmulator, Restored, data_path

log = logging.getLogger("metro.local.state")


class DurableMotoServer:
    """What moto's ThreadedMotoServer does, with the state kept in ``directory``."""

    def __init__(self, host: str, port: int, directory: str, sync: bool, snapshot_bytes: int) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        self._host, self._port = host, port
        self.data = DataDir(data_path(directory), sync)
        self.app = DurableEmulator(DomainDispatcherApplication(create_backend_app), self.data,
                                   metadata.version("moto"), snapshot_bytes)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.restored: Restored | None = None

    def start(self) -> Restored:
        from moto.moto_server.werkzeug_app import MotoRequestHandler
        from werkzeug.serving import make_server

        try:
            self.restored = self.app.restore()
        except BaseException:
            self.data.close()
            raise
        r = self.restored
        print(f"Metro state in {self.data.path}: " + (
            f"snapshot {r.snapshot_generation}, " if r.snapshot_generation is not None else "no snapshot, ")
            + f"{r.replayed} calls replayed in {r.seconds:.2f} s", flush=True)
        self._server = make_server(self._host, self._port, self.app, True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-emulator", daemon=True)
        self._thread.start()
        return r

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self.app.close()
