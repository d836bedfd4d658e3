"""The fault run: traffic through the three-process stack while the nemesis (bench/chaos/nemesis.py) kills,
pauses, partitions and skews the API, the pumps and the emulator, with injected AWS faults and torn-write
crash points in the API and the pumps; then a drain, the ledger's verdicts and the history checker's."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from botocore.exceptions import ClientError

from bench.chaos.nemesis import Nemesis
from bench.chaos.procs import LocalStack
from bench.chaos.traffic import Traffic
from chalicelib.store.queues import QUEUE_GONE

FAULT_LINE = re.compile(r"fault injection: (\d+) attempts, (\d+) faults (\{.*\})")


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


def drain(traffic: Traffic, timeout: float, tick: Callable[[], None],
          backlog_left: Callable[[], int] = lambda: 0) -> float:
    """Wait until every subscription acknowledged every published key and ``backlog_left()`` is 0 (messages
    whose acknowledgement was lost with the API come back after their deadline), or ``timeout``; returns the
    time taken."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        with traffic.lock:
            acknowledged = traffic.ledger.drained()
        if acknowledged and _backlog_or_none(backlog_left) == 0:
            break
        tick()
        time.sleep(0.5 if not acknowledged else 2.0)
    return time.monotonic() - start


def _backlog_or_none(backlog_left: Callable[[], int]) -> int | None:
    """The backlog, or None when reading it failed this time (the emulator busy, or faulted): drain goes on."""
    try:
        return backlog_left()
    except Exception:
        return None


def _emulator(stack: LocalStack, service: Literal["sqs", "dynamodb"]) -> Any:
    import boto3

    return boto3.client(service, endpoint_url=f"http://127.0.0.1:{stack.emulator_port}", region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def queue_depths(stack: LocalStack) -> dict[str, int]:
    """Messages waiting or in flight in each of the emulator's SQS queues, by queue name."""
    sqs = _emulator(stack, "sqs")
    out = {}
    for url in sqs.list_queues().get("QueueUrls", []):
        try:
            attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
                "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in QUEUE_GONE:
                raise
            continue  # deleted since the listing (a seek retiring its old generation): nothing waits in it
        out[_queue_name(url)] = sum(int(v) for v in attrs.values())
    return out


def _queue_name(url: str) -> str:
    """A queue URL's last part: the records hold the URL the API saw (through its proxy, another host and port)."""
    return url.rsplit("/", 1)[-1]


def subscription_queues(stack: LocalStack) -> set[str]:
    """The names of the queues the subscriptions' records name (their current generations)."""
    table = _emulator(stack, "dynamodb")
    names: set[str] = set()
    for page in table.get_paginator("scan").paginate(TableName="metro-resources", ProjectionExpression="queue_url"):
        names.update(_queue_name(item["queue_url"]["S"]) for item in page["Items"] if "queue_url" in item)
    return names


def backlog(stack: LocalStack) -> int:
    """Messages left in the subscriptions' queues, waiting or in flight (the subscriptions' backlog)."""
    live = subscription_queues(stack)
    return sum(n for name, n in queue_depths(stack).items() if name in live)


def orphaned_queues(stack: LocalStack) -> dict[str, int]:
    """Queues no subscription names (a queue generation a seek or a delete left behind), with their depth."""
    live = subscription_queues(stack)
    return {name: n for name, n in queue_depths(stack).items() if name not in live}


def crash_points(logs: list[Path]) -> dict[str, int]:
    """How often each torn-write crash point fired, from the processes' logs."""
    from bench.chaos.crashpoints import count_crashes

    total = Counter[str]()
    for path in logs:
        total.update(count_crashes(path.read_text(errors="replace")))
    return dict(sorted(total.items()))


def proxies(stack: LocalStack) -> dict[str, Any]:
    return {role: proxy.stats() for role, proxy in stack.proxies.items()}


def report(traffic: Traffic, nemesis: Nemesis, stack: LocalStack, timings: dict[str, float],
           checked: dict[str, Any]) -> dict[str, Any]:
    with traffic.lock:
        summary = traffic.ledger.summary()
        errors = dict(traffic.timeline.error_kinds)
    left = backlog(stack)
    logs = [stack.procs[r].log for r in ("api", "pump")]
    return {
        **summary,
        "passed": summary["passed"] and left == 0 and checked["passed"],
        "backlog_after_drain": left,
        "orphaned_queues": orphaned_queues(stack),
        "history": checked,
        "plan": asdict(traffic.plan),
        "fault_rate": stack.fault_rate,
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "faults": nemesis.summary(),
        "recovery": nemesis.summary()["recovery"],
        "nemesis": nemesis.log(),
        "crash_points": crash_points(logs) if stack.crash_rate else {},
        "partitions": proxies(stack),
        "injected": injected_faults(logs),
        "client_errors": errors,
        "process_starts": {role: proc.starts for role, proc in stack.procs.items()},
    }
