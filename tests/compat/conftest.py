"""Google's own Pub/Sub emulator and Metro's local stack, side by side, one of each per session."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.stack import RunningStack, free_port, start_stack

PROJECT = "compat-project"


@dataclass
class Emulator:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def stop(self) -> None:
        # gcloud starts a shell script that starts the JVM: end the whole process group.
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def start_emulator(log_path: Path, timeout: float = 90) -> Emulator:
    gcloud = shutil.which("gcloud")
    assert gcloud is not None
    port = free_port()
    env = {**os.environ, "CLOUDSDK_CORE_DISABLE_PROMPTS": "1"}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [gcloud, "beta", "emulators", "pubsub", "start", f"--host-port=127.0.0.1:{port}", f"--project={PROJECT}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
    emulator = Emulator(proc, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        if "Server started" in text:
            return emulator
        if proc.poll() is not None:
            raise RuntimeError(f"the Pub/Sub emulator exited early:\n{text[-3000:]}")
        time.sleep(0.2)
    emulator.stop()
    raise RuntimeError(f"the Pub/Sub emulator did not start in {timeout}s:\n{log_path.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    if shutil.which("gcloud") is None:
        pytest.skip("gcloud is not installed: the compatibility tests need `gcloud beta emulators pubsub`")
    if shutil.which("java") is None:
        pytest.skip("java is not installed: Google's Pub/Sub emulator runs on a JVM")
    running = start_emulator(tmp_path_factory.mktemp("emulator") / "emulator.log")
    yield running
    running.stop()


@pytest.fixture(scope="session")
def metro(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("metro") / "metro.log")
    yield running
    running.stop()
