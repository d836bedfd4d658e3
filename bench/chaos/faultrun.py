"""The fault run: traffic through the three-process stack while a killer SIGKILLs and restarts the API or the
pumps at random, with injected AWS faults in both; then a drain, and the ledger's verdicts.

Recovery time after a kill: for the API, from the kill to the first successful request (a GET of the topic,
probed every 50 ms); for the pumps, from the kill to the first push the endpoint receives from the new process.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos.procs import LocalStack
from bench.chaos.traffic import TOPIC, Client, Failed, Traffic

FAULT_LINE = re.compile(r"fault injection: (\d+) attempts, (\d+) faults (\{.*\})")


@dataclass
class Kill:
    role: str
    at_s: float  # seconds since the traffic started
    recovery_s: float | None  # None: nothing observed the new process working in time


@dataclass
class Killer:
    stack: LocalStack
    traffic: Traffic
    every: tuple[float, float] = (2.0, 6.0)
    seed: int = 17
    enabled: bool = True
    kills: list[Kill] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        rng = random.Random(self.seed)
        while self.enabled and not self.stop.wait(rng.uniform(*self.every)):
            role = rng.choice(("api", "pump"))
            at = self.traffic.now()
            killed = self.stack.restart(role)
            recovered = self._api_recovered(killed) if role == "api" else self._pump_recovered(killed)
            self.kills.append(Kill(role, round(at, 2), None if recovered is None else round(recovered, 3)))

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

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="chaos-killer", daemon=True)
        thread.start()
        return thread


def injected_faults(logs: list[Path]) -> dict[str, Any]:
    """Sum the fault injectors' last running counts of every process start found in ``logs``."""
    attempts, faults, kinds = 0, 0, Counter[str]()
    for path in logs:
        for start in path.read_text(errors="replace").split("--- start #")[1:]:
            found = FAULT_LINE.findall(start)
            if found:
                a, f, k = found[-1]
                attempts, faults = attempts + int(a), faults + int(f)
                kinds.update(json.loads(k))
    return {"attempts_seen": attempts, "faults": faults, "kinds": dict(kinds),
            "rate": round(faults / attempts, 4) if attempts else 0.0}


def recovery_summary(kills: list[Kill]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for role in ("api", "pump"):
        times = sorted(k.recovery_s for k in kills if k.role == role and k.recovery_s is not None)
        out[role] = {"kills": sum(k.role == role for k in kills), "unobserved": sum(
            k.role == role and k.recovery_s is None for k in kills)}
        if times:
            out[role].update(min_s=times[0], median_s=times[len(times) // 2], max_s=times[-1])
    return out


def drain(traffic: Traffic, timeout: float, tick: Callable[[], None],
          backlog_left: Callable[[], int] = lambda: 0) -> float:
    """Wait until every subscription acknowledged every published key and ``backlog_left()`` is 0 (messages
    whose acknowledgement was lost with the API come back after their deadline), or ``timeout``; returns the
    time taken."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        with traffic.lock:
            acknowledged = traffic.ledger.drained()
        if acknowledged and backlog_left() == 0:
            break
        tick()
        time.sleep(0.5 if not acknowledged else 2.0)
    return time.monotonic() - start


def backlog(stack: LocalStack) -> int:
    """Messages left in the emulator's SQS queues, waiting or in flight (the subscriptions' backlog)."""
    import boto3

    sqs = boto3.client("sqs", endpoint_url=f"http://127.0.0.1:{stack.emulator_port}", region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    total = 0
    for url in sqs.list_queues().get("QueueUrls", []):
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        total += sum(int(v) for v in attrs.values())
    return total


def report(traffic: Traffic, killer: Killer, stack: LocalStack, timings: dict[str, float]) -> dict[str, Any]:
    with traffic.lock:
        summary = traffic.ledger.summary()
        errors = dict(traffic.timeline.error_kinds)
    left = backlog(stack)
    return {
        **summary,
        "passed": summary["passed"] and left == 0,
        "backlog_after_drain": left,
        "plan": asdict(traffic.plan),
        "fault_rate": stack.fault_rate,
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "recovery": recovery_summary(killer.kills),
        "kills": [asdict(k) for k in killer.kills],
        "injected": injected_faults([stack.procs[r].log for r in ("api", "pump")]),
        "client_errors": errors,
        "process_starts": {role: proc.starts for role, proc in stack.procs.items()},
    }
