"""The fault run's processes: the emulator, the API and the pumps, each started, killed and restarted alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.stack import ROOT, free_port


def rss_kib(pid: int) -> int:
    """Resident set size of process ``pid`` in KiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Proc:
    role: str
    env: dict[str, str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0
    started_at: float = 0.0

    def start(self) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"--- start #{self.starts}\n".encode())
            out.flush()
            self.popen = subprocess.Popen([sys.executable, "-m", "bench.chaos.role", self.role], cwd=ROOT,
                                          env=self.env, stdout=out, stderr=subprocess.STDOUT)
        self.started_at = time.monotonic()

    def kill(self) -> None:
        """SIGKILL: no clean-up, as a crash or Lambda's hard stop."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait()

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def ready(self) -> bool:
        """The current start has printed ``ready``."""
        text = self.log.read_text(errors="replace")
        return text.rsplit(f"--- start #{self.starts}\n", 1)[-1].find("ready") >= 0

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.popen is not None and self.popen.poll() is not None:
                raise RuntimeError(f"{self.role} exited with {self.popen.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.role} not ready after {timeout:.0f}s; see {self.log}")
            time.sleep(0.05)

    def rss_kib(self) -> int:
        return rss_kib(self.popen.pid) if self.popen is not None else 0


@dataclass
class LocalStack:
    """Emulator, API and pumps as three processes on free ports; logs under ``workdir``."""

    workdir: Path
    fault_rate: float = 0.0
    pull_wait_seconds: float = 1.0
    api_port: int = field(default_factory=free_port)
    emulator_port: int = field(default_factory=free_port)
    procs: dict[str, Proc] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def _env(self, role: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "METRO_AUTH": "open",
               "METRO_EMULATOR_PORT": str(self.emulator_port),
               "METRO_PORT": str(self.api_port if role == "api" else free_port()),
               "METRO_AMS_PORT": str(free_port()),  # every Stack also serves the AMS dialect: one port each
               "METRO_PULL_WAIT_SECONDS": str(self.pull_wait_seconds),
               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
        if role == "emulator":
            env.pop("AWS_ENDPOINT_URL", None)
        else:
            env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{self.emulator_port}"
            env["METRO_FAULT_RATE"] = str(self.fault_rate)
        return env

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for role in ("emulator", "api", "pump"):  # the emulator first: the others bootstrap against it
            proc = self.procs[role] = Proc(role, self._env(role), self.workdir / f"{role}.log")
            proc.log.write_bytes(b"")
            proc.start()
            proc.wait_ready()

    def restart(self, role: str) -> float:
        """Kill ``role`` and start it again at once; returns when it was killed (monotonic)."""
        proc = self.procs[role]
        proc.kill()
        killed = time.monotonic()
        proc.env["METRO_PORT"] = proc.env["METRO_PORT"] if role == "api" else str(free_port())
        proc.env["METRO_AMS_PORT"] = str(free_port())
        proc.start()
        return killed

    def rss_kib(self) -> dict[str, int]:
        return {role: proc.rss_kib() for role, proc in self.procs.items()}

    def stop(self) -> None:
        for role in ("pump", "api", "emulator"):
            if role in self.procs:
                self.procs[role].stop()
