"""`make run`'s process: one line saying where it listens, and Ctrl-C (SIGINT) or SIGTERM stops it cleanly."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import requests

from tests.stack import start_stack

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_stack_stops_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    stack = start_stack(tmp_path / "metro.log")
    try:
        assert requests.get(stack.url + "/", timeout=10).text == "Ok"
        log = (tmp_path / "metro.log").read_text()
        assert [line for line in log.splitlines() if line.startswith("Metro listening on ")] == [
            f"Metro listening on {stack.url} (AWS: {stack.emulator_url})"]
        stack.process.send_signal(sig)
        assert stack.process.wait(timeout=20) == 0
        assert "Metro stopping" in (tmp_path / "metro.log").read_text()
    finally:
        if stack.process.poll() is None:
            stack.process.kill()
