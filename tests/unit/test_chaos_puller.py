"""The fault run's subscriber process (bench/chaos/puller.py): its reports cross the pipe with their own times,
and the harness's handle reads them, freezes the process, starts it again after a death and stops it."""

from __future__ import annotations

import io
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.chaos import puller

pytestmark = pytest.mark.unit


class Recorder:
    """The harness's sink, recording each call with its keyword arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> tuple[str, str]:
            with self.lock:
                self.calls.append((name, args, kwargs))
            return "", ""
        return record

    def named(self, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        with self.lock:
            return [(a, k) for n, a, k in self.calls if n == name]


def test_reports_cross_the_pipe_with_the_childs_times() -> None:
    out, clock = io.StringIO(), iter([1100.0, 1100.5, 1101.25, 1102.0])
    sink = puller.PipeSink(started=1000.0, nack_rate=0.0, out=out, clock=lambda: next(clock))
    message = {"messageId": "m1", "attributes": {"k": "key-1", "seq": "3"}, "publishTime": "2026-01-01T00:00:00Z"}
    assert sink.received("streamed", "stream", "ack-1", message, 2) == ("m1", "key-1")  # at 100
    sink.acknowledged("streamed", "stream", {"ack-1": ("m1", "key-1")}, 100.25, "error", {"ack-1"})  # at 100.5
    sink.nacked("streamed", "stream", ["ack-2"], 101.0, "unknown")  # at 101.25
    sink.error("stream: gRPC UNAVAILABLE")
    assert not sink.should_nack("streamed")
    harness = Recorder()
    for line in out.getvalue().splitlines():
        puller.deliver(harness, json.loads(line))
    [(args, kwargs)] = harness.named("received")
    assert args == ("streamed", "stream", "ack-1", message, 2) and kwargs == {"t": 100.0}
    [(args, kwargs)] = harness.named("acknowledged")
    assert args == ("streamed", "stream", {"ack-1": ("m1", "key-1")}, 100.25, "error", {"ack-1"})
    assert kwargs == {"t": 100.5}
    [(args, kwargs)] = harness.named("nacked")
    assert args == ("streamed", "stream", ["ack-2"], 101.0, "unknown") and kwargs == {"t": 101.25}
    assert harness.named("error") == [(("stream: gRPC UNAVAILABLE",), {})]
    with pytest.raises(ValueError):
        puller.deliver(harness, {"op": "acked twice"})


# A stand-in child: one report per line it is sent, dies when sent "die", ends at its stdin's end.
CHILD = """
import json, os, sys
print(json.dumps({"op": "error", "kind": "started"}), flush=True)
for line in sys.stdin:
    if line.strip() == "die":
        os._exit(3)
    print(json.dumps({"op": "error", "kind": line.strip()}), flush=True)
"""


def errors(harness: Recorder) -> list[str]:
    return [args[0] for args, _ in harness.named("error")]


def wait_for(condition: Any, timeout: float = 20.0) -> None:
    """Poll a condition on a real child process, whose own pace the test cannot inject."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def started(tmp_path: Path, exactly_once: bool) -> tuple[Recorder, puller.PullerProcess]:
    """A handle on the stand-in child, started and heard from once."""
    harness = Recorder()
    handle = puller.PullerProcess(harness, "host", "p", "streamed", exactly_once, 0.0, 0.0, tmp_path / "puller.log")
    handle.args = [sys.executable, "-c", CHILD]
    handle.start()
    wait_for(lambda: errors(harness) == ["started"])
    assert handle.popen is not None
    return harness, handle


def test_the_handle_reads_freezes_restarts_and_stops_its_child(tmp_path: Path) -> None:
    harness, handle = started(tmp_path, exactly_once=True)
    first = handle.popen
    assert first is not None and first.stdin is not None

    stop = threading.Event()
    paused = threading.Thread(target=handle.pause, args=(30.0, stop))
    paused.start()
    wait_for(lambda: Path(f"/proc/{first.pid}/stat").read_text().split()[2] == "T")  # stopped by SIGSTOP
    first.stdin.write("while frozen\n")
    first.stdin.flush()
    time.sleep(0.2)  # a frozen child answers nothing; the positive control follows the SIGCONT
    assert "while frozen" not in errors(harness)
    stop.set()
    paused.join()
    wait_for(lambda: "while frozen" in errors(harness))

    first.stdin.write("die\n")
    first.stdin.flush()
    wait_for(lambda: errors(harness)[-2:] == ["puller: exited 3", "started"])
    assert handle.starts == 2 and handle.popen is not first

    handle.stop()
    assert handle.popen.poll() == 0 and not handle._reader.is_alive()
    assert "--- start #2" in (tmp_path / "puller.log").read_text()


def test_stopping_a_frozen_child_wakes_it_first(tmp_path: Path) -> None:
    _, handle = started(tmp_path, exactly_once=False)
    assert handle.popen is not None
    handle.popen.send_signal(signal.SIGSTOP)
    handle.stop(timeout=20)
    assert handle.popen.poll() == 0 and handle.starts == 1
