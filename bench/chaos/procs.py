"""The fault run's processes: the emulator, the API and the pumps, each started, killed, paused and restarted
alone. With ``partitions``, the API and the pumps reach the emulator through a proxy each
(bench/chaos/proxy.py); with ``skew``, each process reads its clock offset from a control file
(bench/chaos/skew.py); with ``crash_rate``, the API and the pumps die at their torn-write points
(bench/chaos/crashpoints.py) and a supervisor starts them again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.stack import ROOT, free_port

METRO_ROLES = ("api", "pump")


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

    def send(self, sig: signal.Signals) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(sig)

    def exited(self) -> bool:
        return self.popen is not None and self.popen.poll() is not None

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
    partitions: bool = False
    skew: bool = False
    crash_rate: float = 0.0
    api_port: int = field(default_factory=free_port)
    ams_port: int = field(default_factory=free_port)
    emulator_port: int = field(default_factory=free_port)
    procs: dict[str, Proc] = field(default_factory=dict)
    proxies: dict[str, Any] = field(default_factory=dict)  # role -> its PartitionProxy to the emulator
    crashes: list[tuple[str, float]] = field(default_factory=list)  # (role, monotonic time) of deaths it restarted
    lock: threading.Lock = field(default_factory=threading.Lock)
    _watching: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def ams_url(self) -> str:
        return f"https://127.0.0.1:{self.ams_port}"

    def skew_file(self, role: str) -> Path:
        return self.workdir / f"{role}.skew.json"

    def _env(self, role: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "METRO_AUTH": "open",
               "METRO_EMULATOR_PORT": str(self.emulator_port),
               "METRO_PORT": str(self.api_port if role == "api" else free_port()),
               # every Stack also opens the AMS dialect's port: the API's is fixed, the others' free
               "METRO_AMS_PORT": str(self.ams_port if role == "api" else free_port()),
               "METRO_PULL_WAIT_SECONDS": str(self.pull_wait_seconds),
               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
        if self.skew:
            env["METRO_CHAOS_SKEW_FILE"] = str(self.skew_file(role))
        if role == "emulator":
            env.pop("AWS_ENDPOINT_URL", None)
        else:
            proxy = self.proxies.get(role)
            env["AWS_ENDPOINT_URL"] = proxy.url if proxy is not None else f"http://127.0.0.1:{self.emulator_port}"
            env["METRO_FAULT_RATE"] = str(self.fault_rate)
            if self.crash_rate:
                env["METRO_CHAOS_CRASH_RATE"] = str(self.crash_rate)
        return env

    @staticmethod
    def _initial_skew(role: str) -> dict[str, float]:
        """The emulator's clock runs steadily ahead for the whole run; Metro's start true (the nemesis skews them)."""
        from bench.chaos.skew import EMULATOR_OFFSET

        return {"offset": EMULATOR_OFFSET} if role == "emulator" else {}

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for role in ("emulator", "api", "pump"):  # the emulator first: the others bootstrap against it
            if self.skew:
                self.skew_file(role).write_text(json.dumps(self._initial_skew(role)))
            if self.partitions and role in METRO_ROLES:
                from bench.chaos.proxy import PartitionProxy

                self.proxies[role] = PartitionProxy(self.emulator_port)
                self.proxies[role].start()
            proc = self.procs[role] = Proc(role, self._env(role), self.workdir / f"{role}.log")
            proc.log.write_bytes(b"")
            proc.start()
            proc.wait_ready()
        if self.crash_rate:
            threading.Thread(target=self._supervise, name="chaos-supervisor", daemon=True).start()

    def restart(self, role: str) -> float:
        """Kill ``role`` and start it again at once; returns when it was killed (monotonic)."""
        with self.lock:
            proc = self.procs[role]
            proc.kill()
            killed = time.monotonic()
            proc.env["METRO_PORT"] = proc.env["METRO_PORT"] if role == "api" else str(free_port())
            if role != "api":
                proc.env["METRO_AMS_PORT"] = str(free_port())
            proc.start()
            return killed

    def pause(self, role: str, seconds: float, stop: threading.Event) -> None:
        """SIGSTOP ``role`` for ``seconds`` (or until ``stop``), then SIGCONT: a process frozen, not dead."""
        with self.lock:
            self.procs[role].send(signal.SIGSTOP)
        stop.wait(seconds)
        with self.lock:
            self.procs[role].send(signal.SIGCONT)

    def _supervise(self) -> None:
        """Start again an API or pumps process that died on its own (a torn-write crash point)."""
        while not self._watching.wait(0.2):
            for role in METRO_ROLES:
                with self.lock:
                    proc = self.procs[role]
                    if not proc.exited():
                        continue
                    self.crashes.append((role, time.monotonic()))
                    proc.env["METRO_PORT"] = proc.env["METRO_PORT"] if role == "api" else str(free_port())
                    proc.start()

    def rss_kib(self) -> dict[str, int]:
        return {role: proc.rss_kib() for role, proc in self.procs.items()}

    def stop(self) -> None:
        self._watching.set()
        for role in ("pump", "api", "emulator"):
            if role in self.procs:
                self.procs[role].send(signal.SIGCONT)
                self.procs[role].stop()
        for proxy in self.proxies.values():
            proxy.stop()
