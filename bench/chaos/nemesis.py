"""The fault schedule (Jepsen calls it the nemesis): one process fault at a time, at random, every few seconds,
while clock skew, a condition rather than an event, comes and goes on its own schedule beside them.

- ``kill``: SIGKILL the API or the pumps and start them again at once (a crash, Lambda's hard stop);
- ``pause``: SIGSTOP the API, the pumps or the streamed subscription's subscriber (a client process of its own,
  bench/chaos/puller.py) for 5-30 s, then SIGCONT: past a 20 s ack deadline, and past the moment another holder
  may take a lease over; the frozen process then resumes with what it held;
- ``partition``: the API's or the pumps' proxy to the emulator blackholes, delays or resets, one direction or
  both, for 2-15 s (bench/chaos/proxy.py);
- ``skew``: the API's or the pumps' clock runs ahead, behind, or strobes between the two for 10-40 s
  (bench/chaos/skew.py), then comes back. The emulator's clock runs a steady ``EMULATOR_OFFSET`` ahead for the
  whole run instead: it stands in for AWS, whose clock disagrees with Metro's but never jumps.

Torn writes need no schedule: the crash points fire inside the processes (bench/chaos/crashpoints.py).
Recovery time after a kill: for the API, from the kill to the first successful request (a GET of the topic,
probed every 50 ms); for the pumps, from the kill to the first push the endpoint receives from the new process.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.chaos.procs import METRO_ROLES, LocalStack
from bench.chaos.rest import Client, Failed
from bench.chaos.subscriptions import TOPIC
from bench.chaos.traffic import Traffic

KILL, PAUSE, PARTITION, SKEW = "kill", "pause", "partition", "skew"
KINDS = (KILL, PAUSE, PARTITION, SKEW)
PAUSE_SECONDS = (5.0, 30.0)
PARTITION_SECONDS = (2.0, 15.0)
SKEW_SECONDS = (10.0, 40.0)


@dataclass
class Fault:
    kind: str
    role: str
    at_s: float  # seconds since the traffic started
    seconds: float = 0.0  # how long it lasted (0 for a kill)
    detail: str = ""
    recovery_s: float | None = None  # kills: None when nothing observed the new process working in time


@dataclass
class Nemesis:
    stack: LocalStack
    traffic: Traffic
    kinds: tuple[str, ...] = (KILL,)
    every: tuple[float, float] = (2.0, 6.0)
    seed: int = 17
    faults: list[Fault] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, kinds: tuple[str, ...], seed: int) -> None:
        rng = random.Random(seed)
        while kinds and not self.stop.wait(rng.uniform(*self.every)):
            kind = rng.choice(kinds)
            fault = getattr(self, f"_{kind}")(rng)
            self.faults.append(fault)

    def _kill(self, rng: random.Random) -> Fault:
        role, at = rng.choice(METRO_ROLES), self.traffic.now()
        killed = self.stack.restart(role)
        recovered = self._api_recovered(killed) if role == "api" else self._pump_recovered(killed)
        return Fault(KILL, role, round(at, 2), recovery_s=None if recovered is None else round(recovered, 3))

    def _pause(self, rng: random.Random) -> Fault:
        clients = self.traffic.processes  # a subscriber in a process of its own (bench/chaos/puller.py)
        role = rng.choice((*METRO_ROLES, *sorted(clients)))
        at, seconds = self.traffic.now(), rng.uniform(*PAUSE_SECONDS)
        if role in clients:
            clients[role].pause(seconds, self.stop)
        else:
            self.stack.pause(role, seconds, self.stop)
        return Fault(PAUSE, role, round(at, 2), round(seconds, 1))

    def _partition(self, rng: random.Random) -> Fault:
        from bench.chaos.proxy import PARTITIONS, describe

        role, at, seconds = rng.choice(METRO_ROLES), self.traffic.now(), rng.uniform(*PARTITION_SECONDS)
        mode, direction = rng.choice(PARTITIONS)
        delay = round(rng.uniform(0.2, 3.0), 2) if mode == "delay" else 0.0
        proxy = self.stack.proxies[role]
        proxy.set(mode, direction, delay)
        self.stop.wait(seconds)
        proxy.set("pass")
        return Fault(PARTITION, role, round(at, 2), round(seconds, 1), describe(mode, direction, delay))

    def _skew(self, rng: random.Random) -> Fault:
        from bench.chaos import skew

        role, at, seconds = rng.choice(METRO_ROLES), self.traffic.now(), rng.uniform(*SKEW_SECONDS)
        spec = rng.choice(skew.SKEWS)
        skew.write(self.stack.skew_file(role), spec)
        self.stop.wait(seconds)
        skew.write(self.stack.skew_file(role), {})
        return Fault(SKEW, role, round(at, 2), round(seconds, 1), skew.describe(spec))

    def _api_recovered(self, killed: float, timeout: float = 120.0) -> float | None:
        client = Client(self.stack.url, self.traffic.project)
        while time.monotonic() - killed < timeout:
            try:
                client.call("GET", f"topics/{TOPIC}", timeout=5)
                return time.monotonic() - killed
            except Failed:
                time.sleep(0.05)
        return None

    def _pump_recovered(self, killed: float, timeout: float = 120.0) -> float | None:
        proc = self.stack.procs["pump"]
        while time.monotonic() - killed < timeout:
            if self.traffic.last_push > proc.started_at and proc.ready():
                return self.traffic.last_push - killed
            time.sleep(0.05)
        return None

    def start(self) -> None:
        events = tuple(k for k in self.kinds if k != SKEW)
        threading.Thread(target=self.run, args=(events, self.seed), name="chaos-nemesis", daemon=True).start()
        if SKEW in self.kinds:
            threading.Thread(target=self.run, args=((SKEW,), self.seed + 1), name="chaos-skew", daemon=True).start()

    def summary(self) -> dict[str, Any]:
        """Counts per kind and role, and the kills' recovery times."""
        counts = Counter(f"{f.kind} {f.role}" for f in self.faults)
        out: dict[str, Any] = {"counts": dict(sorted(counts.items())), "recovery": {}}
        for role in METRO_ROLES:
            kills = [f for f in self.faults if f.kind == KILL and f.role == role]
            times = sorted(f.recovery_s for f in kills if f.recovery_s is not None)
            out["recovery"][role] = {"kills": len(kills), "unobserved": len(kills) - len(times)}
            if times:
                out["recovery"][role].update(min_s=times[0], median_s=times[len(times) // 2], max_s=times[-1])
        return out

    def log(self) -> list[dict[str, Any]]:
        return [asdict(f) for f in self.faults]
