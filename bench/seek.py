"""The seek benchmark: wall time and AWS requests of seeking a subscription back over N retained messages.

A topic keeping a day of messages receives N messages of 1 KiB (publish requests of 100); a subscription
created afterwards seeks back to before it existed, so the seek re-enqueues all N from the topic's log.
Measured over the seek call alone: its wall time, and the AWS requests it made by service and operation.
Then the same seek on a second subscription with a small inline limit (a tenth of N; chunks of a quarter):
the time to the call's answer, the time until :seekStatus says it is done, and the requests of the call and
of the seek worker's invocations.
The redelivery itself is the SendMessageBatch calls that put the messages in the queue (one per ten
messages at best); everything else (reading the log and the raw objects, creating and swapping the queue
generation) is the seek's overhead, reported per message (target: under 0.1).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench import metro
from bench.stack import BenchStack
from chalicelib.store import aws

PER_REQUEST = 100
REDELIVERY = ("sqs", "SendMessageBatch")
TARGET_SECONDS = 30.0
TARGET_OVERHEAD_PER_MESSAGE = 0.1
_ids = itertools.count()


def _requests(before: dict[aws.Key, aws.Tally], after: dict[aws.Key, aws.Tally],
              parts: tuple[str, ...] = ("api:seek",)) -> dict[str, int]:
    """AWS calls the given parts made between two counter snapshots, by ``service operation`` (the pumps poll
    meanwhile, and status reads are not the seek's requests)."""
    out: dict[str, int] = {}
    for key, tally in after.items():
        if key[0] not in parts:
            continue
        calls = tally.calls - (before[key].calls if key in before else 0)
        if calls:
            name = f"{key[1]} {key[2]}"
            out[name] = out.get(name, 0) + calls
    return out


def _publish_log(client: metro.MetroClient, topic: str, messages: int, on_progress: Callable[[int], None]) -> None:
    client.call("PUT", f"projects/{metro.PROJECT}/topics/{topic}", {"messageRetentionDuration": "86400s"})
    bodies = metro.payloads(1024)
    for start in range(0, messages, PER_REQUEST):
        count = min(PER_REQUEST, messages - start)
        client.call("POST", f"projects/{metro.PROJECT}/topics/{topic}:publish",
                    {"messages": [{"data": bodies[i % len(bodies)]} for i in range(count)]})
        on_progress(start + count)


def _seek(client: metro.MetroClient, topic: str, sub: str) -> tuple[float, float, dict[str, Any]]:
    """Seek a new subscription of ``topic`` back to the start; (call s, completion s, the seek's status)."""
    path = f"projects/{metro.PROJECT}/subscriptions/{sub}"
    client.call("PUT", path, {"topic": f"projects/{metro.PROJECT}/topics/{topic}"})
    started = time.perf_counter()
    client.call("POST", f"{path}:seek", {"time": "1970-01-01T00:00:00Z"}, timeout=600)
    answered = time.perf_counter() - started
    deadline = started + 600
    while (status := client.call("GET", f"{path}:seekStatus")["seek"])["state"] == "RUNNING":
        if time.perf_counter() > deadline:
            break
        time.sleep(0.05)
    return answered, time.perf_counter() - started, status


def _backlog(client: metro.MetroClient, sub: str) -> int:
    metrics = client.call("GET", f"projects/{metro.PROJECT}/subscriptions/{sub}:metrics")["metrics"]
    backlog = next(m["timeseries"][0]["value"] for m in metrics
                   if m["metric"] == "subscription.number_of_undelivered_messages")
    client.call("DELETE", f"projects/{metro.PROJECT}/subscriptions/{sub}")
    return int(backlog)


def _background(stack: BenchStack, client: metro.MetroClient, topic: str, sub: str, messages: int) -> dict[str, Any]:
    """The same seek with the inline limit at a tenth of it and chunks of a quarter: the call answers after the
    first tenth, the seek worker (played by the local invoke pump) does the rest."""
    limits = {"METRO_SEEK_INLINE_MAX_MESSAGES": str(max(messages // 10, 1)),
              "METRO_SEEK_CHUNK_MESSAGES": str(max(messages // 4, 1))}
    with stack.settings(limits):
        before = stack.counter.snapshot()
        answered, completed, status = _seek(client, topic, sub)
        calls = _requests(before, stack.counter.snapshot(), ("api:seek", "seek_worker"))
    redelivery = calls.get(" ".join(REDELIVERY), 0)
    return {
        "inline_max_messages": int(limits["METRO_SEEK_INLINE_MAX_MESSAGES"]),
        "chunk_messages": int(limits["METRO_SEEK_CHUNK_MESSAGES"]),
        "call_s": round(answered, 2),
        "completed_s": round(completed, 2),
        "state": status["state"],
        "restored": _backlog(client, sub),
        "aws_requests": dict(sorted(calls.items())),
        "overhead_requests_per_message": round((sum(calls.values()) - redelivery) / messages, 4),
    }


def run(stack: BenchStack, messages: int, on_progress: Callable[[int], None]) -> dict[str, Any]:
    client = metro.MetroClient(stack.url)
    n = next(_ids)
    topic = f"seek-topic-{n}"
    _publish_log(client, topic, messages, on_progress)
    before = stack.counter.snapshot()
    wall, _, _ = _seek(client, topic, f"seek-sub-{n}")
    calls = _requests(before, stack.counter.snapshot())
    backlog = _backlog(client, f"seek-sub-{n}")
    redelivery = calls.get(" ".join(REDELIVERY), 0)
    overhead = sum(calls.values()) - redelivery
    return {
        "messages": messages,
        "restored": backlog,
        "wall_s": round(wall, 2),
        "messages_per_s": round(messages / wall) if wall else 0,
        "aws_requests": dict(sorted(calls.items())),
        "redelivery_requests_per_message": round(redelivery / messages, 4),
        "overhead_requests_per_message": round(overhead / messages, 4),
        "targets": {"wall_s": TARGET_SECONDS, "overhead_requests_per_message": TARGET_OVERHEAD_PER_MESSAGE},
        "met": wall < TARGET_SECONDS and overhead / messages < TARGET_OVERHEAD_PER_MESSAGE and backlog == messages,
        "background": _background(stack, client, topic, f"seek-bg-sub-{n}", messages),
    }


def count(wanted: set[str], quick: bool, requested: int) -> int:
    """Messages of the seek run: ``requested`` (-1: 10,000, or 1,000 quick); 0 when ``--only`` leaves it out."""
    if wanted and "seek" not in wanted:
        return 0
    return requested if requested >= 0 else 1000 if quick else 10_000


def run_in(progress: Progress, stack: BenchStack, messages: int) -> dict[str, Any]:
    """:func:`run` with a progress bar; nothing (an empty result) for 0 messages."""
    if not messages:
        return {}
    task = progress.add_task(f"seek: publish {messages:,}, then seek", total=messages)
    return run(stack, messages, lambda done: progress.update(task, completed=done))


def print_result(console: Console, result: dict[str, Any]) -> None:
    if result:
        console.print(table(result))


def table(result: dict[str, Any]) -> Table:
    """The seek run as ``make bench`` prints it."""
    out = Table(title=f"Seek back over {result['messages']:,} retained messages of 1 KiB (one call)")
    for column in ("figure", "value", "target"):
        out.add_column(column)
    targets = result["targets"]
    out.add_row("wall time of the seek call", f"{result['wall_s']} s", f"< {targets['wall_s']:g} s")
    out.add_row("messages restored (queue backlog after)", f"{result['restored']:,}", f"{result['messages']:,}")
    out.add_row("SendMessageBatch per message (the redelivery)", f"{result['redelivery_requests_per_message']}", "")
    out.add_row("other AWS requests per message", f"{result['overhead_requests_per_message']}",
                f"< {targets['overhead_requests_per_message']:g}")
    out.add_row("AWS requests", ", ".join(f"{k} {v}" for k, v in result["aws_requests"].items()), "")
    out.add_row("targets met", "yes" if result["met"] else "NO", "")
    bg = result.get("background")
    if bg:
        out.add_row(f"background seek (inline limit {bg['inline_max_messages']:,}, chunks of {bg['chunk_messages']:,})",
                    f"call {bg['call_s']} s, done {bg['completed_s']} s ({bg['state']})", "")
        out.add_row("background: messages restored", f"{bg['restored']:,}", f"{result['messages']:,}")
        out.add_row("background: other AWS requests per message", f"{bg['overhead_requests_per_message']}",
                    f"< {targets['overhead_requests_per_message']:g}")
        out.add_row("background: AWS requests", ", ".join(f"{k} {v}" for k, v in bg["aws_requests"].items()), "")
    return out


if __name__ == "__main__":
    import json
    import sys

    stack = BenchStack()
    try:
        print(json.dumps(run(stack, int(sys.argv[1]) if len(sys.argv) > 1 else 10_000, lambda _: None), indent=2))
    finally:
        stack.stop()
