"""`make run`'s process: one line saying where it listens, Ctrl-C (SIGINT) or SIGTERM stops it cleanly, and a
second one on a taken port exits at once saying which port and which variable moves it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.stack import ROOT, free_port, stack_env, start_stack

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_stack_stops_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    stack = start_stack(tmp_path / "metro.log")
    try:
        assert requests.get(stack.url + "/", timeout=10).json()["ports"]["rest"] == int(stack.url.rsplit(":", 1)[1])
        log = (tmp_path / "metro.log").read_text()
        assert [line for line in log.splitlines() if line.startswith("Metro listening on ")] == [
            f"Metro listening on {stack.url} and gRPC (AWS: {stack.emulator_url}; auth: open: every caller is "
            "service_admin)"]
        stack.process.send_signal(sig)
        assert stack.process.wait(timeout=20) == 0
        assert "Metro stopping" in (tmp_path / "metro.log").read_text()
    finally:
        if stack.process.poll() is None:
            stack.process.kill()


@pytest.mark.parametrize(("shared", "variable"), [("api", "METRO_PORT"), ("emulator", "METRO_EMULATOR_PORT"),
                                                 ("ams", "METRO_AMS_PORT")])
def test_a_second_stack_on_a_taken_port_exits_at_once_naming_the_port(tmp_path: Path, shared: str,
                                                                       variable: str) -> None:
    first = start_stack(tmp_path / "first.log")
    try:
        api, emulator = int(first.url.rsplit(":", 1)[1]), int(first.emulator_url.rsplit(":", 1)[1])
        ams = int(first.ams_host.rsplit(":", 1)[1])
        taken = {"api": api, "emulator": emulator, "ams": ams}[shared]
        ports = (api if shared == "api" else free_port(), emulator if shared == "emulator" else free_port())
        extra = {"METRO_AMS_PORT": str(ams)} if shared == "ams" else None
        second = subprocess.run([sys.executable, "-m", "chalicelib.local"], cwd=ROOT, env=stack_env(*ports, extra),
                                capture_output=True, text=True, timeout=20, check=False)
        assert second.returncode != 0
        assert f"Port {taken} " in second.stderr and variable in second.stderr, second.stderr
        assert "Metro listening" not in second.stdout
        assert requests.get(first.url + "/", timeout=10).json()["name"] == "Metro"  # the first stack is untouched
    finally:
        first.stop()
