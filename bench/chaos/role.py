"""``python -m bench.chaos.role {emulator,api,pump}``: one part of the local stack as its own process, so that a
fault run can kill the API or the pumps while the emulator keeps the state.

- ``emulator``: moto's server with Metro's speed-ups (chalicelib/local/moto_speedups.py) on METRO_EMULATOR_PORT,
  tracing its FIFO queues when METRO_CHAOS_SQS_TRACE names a file (bench/chaos/sqs_trace.py);
- ``api``: the Chalice app over HTTP on METRO_PORT against AWS_ENDPOINT_URL, no pumps;
- ``pump``: the trigger pump, the push pump and the maintenance schedule against AWS_ENDPOINT_URL, no API.

Each prints ``ready`` once it serves. ``METRO_FAULT_RATE`` applies to the API and the pumps. Two more faults of
the fault run are installed here, never in Metro's code: ``METRO_CHAOS_SKEW_FILE`` names the control file of
this process's clock offset (bench/chaos/skew.py; installed before anything imports Metro, whose clocks capture
``time.time``), and ``METRO_CHAOS_CRASH_RATE`` makes the API or the pumps die at a torn-write point
(bench/chaos/crashpoints.py).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path


def _emulator() -> None:
    from bench.chaos import sqs_trace
    from chalicelib.local.server import start_emulator

    start_emulator("127.0.0.1", int(os.environ["METRO_EMULATOR_PORT"]))
    sqs_trace.install()  # after the fixes: it records what the fixed emulator does
    print("ready", flush=True)
    threading.Event().wait()


def _crash_points() -> None:
    rate = float(os.environ.get("METRO_CHAOS_CRASH_RATE") or 0)
    if rate:
        from bench.chaos import crashpoints

        crashpoints.install(rate)


def _api() -> None:
    from chalicelib.local.server import Stack

    stack = Stack(use_aws=False)
    _crash_points()
    threading.Thread(target=stack.ams.server.serve_forever, kwargs={"poll_interval": 0.2}, name="ams",
                     daemon=True).start()  # the AMS dialect; gRPC is spliced off the API's port
    stack.invocations.start()  # the asynchronous invocations the API makes (the seek worker's)
    print("ready", flush=True)
    stack.server.server.serve_forever(poll_interval=0.2)


def _pump() -> None:
    from chalicelib.local.server import Stack

    stack = Stack(use_aws=False)
    stack.server.server.server_close()  # this process serves no API
    _crash_points()
    stack.pump.start()
    stack.push_pump.start()
    stack.schedule.start()
    stack.sweep.start()  # last delivery attempts forwarded to the dead-letter topic
    print("ready", flush=True)
    threading.Event().wait()


ROLES = {"emulator": _emulator, "api": _api, "pump": _pump}


def main(role: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for noisy in ("botocore", "urllib3", "werkzeug", "moto"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if os.environ.get("METRO_CHAOS_SKEW_FILE"):
        from bench.chaos import skew

        skew.install(Path(os.environ["METRO_CHAOS_SKEW_FILE"]), moto=role == "emulator")
    ROLES[role]()


if __name__ == "__main__":
    main(sys.argv[1])
