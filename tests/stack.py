"""Start the real embedded stack (`python -m chalicelib.local`) as a subprocess on free ports."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from chalicelib.config import LOCAL_ACK_SECRET

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunningStack:
    process: subprocess.Popen[str]
    url: str
    host: str
    emulator_url: str
    log_path: Path
    ams_host: str = ""  # host:port of the AMS dialect's HTTPS endpoint
    ams_cert: str = ""  # the path of its self-signed certificate (for verify=)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def stack_env(port: int, emulator_port: int, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a stack serving on ``port`` with its emulator on ``emulator_port``.

    A stack in keys mode gets an ack secret of its own, fresh per run, unless one is given: Metro refuses keys
    mode on the built-in one (chalicelib/runtime.check_secrets)."""
    env = {**os.environ, "METRO_PORT": str(port), "METRO_EMULATOR_PORT": str(emulator_port),
           "METRO_AMS_PORT": str(free_port()),
           "METRO_PULL_WAIT_SECONDS": "2", "PYTHONUNBUFFERED": "1",
           "METRO_DATA_DIR": "",  # in memory unless a test asks for durable state (docs/local-state.md)
           **(extra_env or {})}
    env.pop("AWS_ENDPOINT_URL", None)
    keys = env.get("METRO_AUTH", "").strip().lower() == "keys"
    if keys and env.get("METRO_ACK_SECRET", "") in ("", LOCAL_ACK_SECRET):
        env["METRO_ACK_SECRET"] = secrets.token_urlsafe(32)
    return env


def start_stack(log_path: Path, extra_env: dict[str, str] | None = None, timeout: float = 60) -> RunningStack:
    port, emu, ams = free_port(), free_port(), free_port()
    ams_env = {"METRO_AMS_PORT": str(ams), "METRO_AMS_CERT_DIR": str(log_path.parent / f"{log_path.stem}-tls")}
    log = log_path.open("w")
    proc = subprocess.Popen([sys.executable, "-m", "chalicelib.local"], cwd=ROOT,
                            env=stack_env(port, emu, {**ams_env, **(extra_env or {})}),
                            stdout=log, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"stack exited early:\n{log_path.read_text()}")
        if "Metro listening" in log_path.read_text():
            cert = Path(ams_env["METRO_AMS_CERT_DIR"]).resolve() / "ams-local-cert.pem"
            return RunningStack(proc, f"http://127.0.0.1:{port}", f"127.0.0.1:{port}", f"http://127.0.0.1:{emu}",
                                log_path, f"127.0.0.1:{ams}", str(cert))
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"stack did not start in {timeout}s:\n{log_path.read_text()}")


@contextlib.contextmanager
def keys_mode_stack(log_dir: Path, admin_key: str, **extra: str) -> Iterator[RunningStack]:
    """A stack in keys mode whose service admin holds ``admin_key`` (``extra``: more settings), stopped at the end."""
    running = start_stack(log_dir / "metro.log", extra_env={"METRO_AUTH": "keys", "METRO_ADMIN_KEY": admin_key,
                                                            **extra})
    try:
        yield running
    finally:
        running.stop()
