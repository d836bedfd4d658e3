"""The streamed subscription's subscriber as a process of its own, so that the fault run can freeze a client:
SIGSTOP for 5-30 s, past its 20 s ack deadline, then SIGCONT. A frozen client holds its stream open and its
messages leased; the service must hand them out again once their deadlines pass, and refuse, on an exactly-once
subscription, the acknowledgements the client sends when it wakes up with its stale ack ids.

- The child, ``python -m bench.chaos.puller HOST PROJECT SUB [--exactly-once] --nack-rate R --started S``, runs
  bench/chaos/edge_grpc.py's ``StreamingSubscriber`` with a ``PipeSink``: each report is one JSON line on its
  stdout, timed on the harness's clock (``CLOCK_MONOTONIC`` is one clock for every process of a machine, and
  ``S`` is the harness's start on it). It stops its stream and exits when its stdin closes.
- The harness side, ``PullerProcess``, starts it, hands its lines to the harness's ``Sink`` (traffic.Traffic)
  with the child's times, pauses it, and starts it again should it die.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from bench.stack import ROOT

ROLE = "puller"  # its name in the fault log


class PipeSink:
    """The child's ``Sink`` (bench/chaos/edges.py): reports go to ``out`` as JSON lines."""

    def __init__(self, started: float, nack_rate: float, out: IO[str], seed: int = 23,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.started, self.nack_rate, self.out, self.clock = started, nack_rate, out, clock
        self.rng = random.Random(seed)
        self.lock = threading.Lock()

    def now(self) -> float:
        return self.clock() - self.started

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record)
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()

    def should_nack(self, sub: str) -> bool:
        with self.lock:
            return self.rng.random() < self.nack_rate

    def received(self, sub: str, edge: str, ack_id: str, message: dict[str, Any], attempt: int) -> tuple[str, str]:
        self._write({"op": "received", "t": self.now(), "sub": sub, "edge": edge, "ack_id": ack_id,
                     "message": message, "attempt": attempt})
        return message.get("messageId", ""), (message.get("attributes") or {}).get("k", "")

    def acknowledged(self, sub: str, edge: str, acks: dict[str, tuple[str, str]], t_sent: float, outcome: str,
                     refused: set[str]) -> None:
        self._write({"op": "acknowledged", "t": self.now(), "sub": sub, "edge": edge,
                     "acks": {ack_id: list(ids) for ack_id, ids in acks.items()}, "t_sent": t_sent,
                     "outcome": outcome, "refused": sorted(refused)})

    def nacked(self, sub: str, edge: str, ack_ids: list[str], t_sent: float, outcome: str) -> None:
        self._write({"op": "nacked", "t": self.now(), "sub": sub, "edge": edge, "ack_ids": ack_ids,
                     "t_sent": t_sent, "outcome": outcome})

    def error(self, kind: str) -> None:
        self._write({"op": "error", "kind": kind})


def deliver(sink: Any, record: dict[str, Any]) -> None:
    """Hand one of the child's reports to the harness's sink, with the child's times."""
    op, t = record["op"], record.get("t")
    if op == "received":
        sink.received(record["sub"], record["edge"], record["ack_id"], record["message"], record["attempt"], t=t)
    elif op == "acknowledged":
        acks = {ack_id: (ids[0], ids[1]) for ack_id, ids in record["acks"].items()}
        sink.acknowledged(record["sub"], record["edge"], acks, record["t_sent"], record["outcome"],
                          set(record["refused"]), t=t)
    elif op == "nacked":
        sink.nacked(record["sub"], record["edge"], record["ack_ids"], record["t_sent"], record["outcome"], t=t)
    elif op == "error":
        sink.error(record["kind"])
    else:
        raise ValueError(f"unknown report {op!r}")


class PullerProcess:
    """The harness's handle on the child: started, read, paused, restarted after a death, stopped."""

    def __init__(self, sink: Any, host: str, project: str, sub: str, exactly_once: bool, nack_rate: float,
                 started: float, log: Path) -> None:
        self.sink, self.log = sink, log
        self.args = [sys.executable, "-m", "bench.chaos.puller", host, project, sub, "--nack-rate", str(nack_rate),
                     "--started", repr(started), *(["--exactly-once"] if exactly_once else [])]
        self.popen: subprocess.Popen[str] | None = None
        self.starts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"chaos-{ROLE}-{sub}")

    def start(self) -> None:
        self._spawn()
        self._reader.start()

    def _spawn(self) -> None:
        with self._lock:
            self.starts += 1
            with self.log.open("a") as err:
                err.write(f"--- start #{self.starts}\n")
                err.flush()
                self.popen = subprocess.Popen(self.args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=err, text=True)

    def _read(self) -> None:
        while True:
            popen = self.popen
            assert popen is not None and popen.stdout is not None
            for line in popen.stdout:
                try:
                    deliver(self.sink, json.loads(line))
                except Exception as exc:  # a bad line is counted, never the end of the reader
                    self.sink.error(f"{ROLE}: {type(exc).__name__}")
            popen.wait()
            if self._stopping.is_set():
                return
            self.sink.error(f"{ROLE}: exited {popen.returncode}")
            self._spawn()

    def pause(self, seconds: float, stop: threading.Event) -> None:
        """SIGSTOP for ``seconds`` (or until ``stop``), then SIGCONT."""
        self._signal(signal.SIGSTOP)
        stop.wait(seconds)
        self._signal(signal.SIGCONT)

    def _signal(self, sig: signal.Signals) -> None:
        with self._lock:
            if self.popen is not None and self.popen.poll() is None:
                self.popen.send_signal(sig)

    def stop(self, timeout: float = 40.0) -> None:
        """Close its stdin (it stops its stream and exits), wait for it and for its last reports."""
        self._stopping.set()
        self._signal(signal.SIGCONT)  # a paused child cannot read its stdin's end
        with self._lock:
            popen = self.popen
        if popen is None:
            return
        if popen.stdin is not None:
            popen.stdin.close()
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
        self._reader.join(timeout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("host")
    parser.add_argument("project")
    parser.add_argument("sub")
    parser.add_argument("--exactly-once", action="store_true")
    parser.add_argument("--nack-rate", type=float, default=0.0)
    parser.add_argument("--started", type=float, required=True)
    args = parser.parse_args(argv)
    from bench.chaos.edge_grpc import StreamingSubscriber

    sink = PipeSink(args.started, args.nack_rate, sys.stdout)
    subscriber = StreamingSubscriber(args.host, args.project, args.sub, sink, exactly_once=args.exactly_once)
    subscriber.start()
    sys.stdin.read()  # until the harness closes it
    subscriber.stop()


if __name__ == "__main__":
    main()
