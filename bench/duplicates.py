"""Duplicate deliveries with no fault injected, per subscription kind, and why each one happened.

The embedded stack (bench/stack.py) runs in this process, so every SQS receive a pull makes is seen as it happens:
its time within its pull, its receipt handle, the message ids it carried (packs opened) and SQS's
ApproximateReceiveCount. One topic has a plain, an ordered (FIFO), an exactly-once and a push subscription; N
messages are published once, then each pull subscription is drained by ``consumers`` threads pulling
maxMessages=100 and acknowledging what came (the push subscription's webhook counts what it was sent). Each
delivery's ack id is decoded back to its receipt handle, so every duplicate is traced to the delivery before it:
which pull, when in that pull its receive was, how long that pull took, when the acknowledge came, whether the
lease (the receive's visibility, or a later visibility change the pull made) had ended by then, and whether the
message had been received again before that acknowledge (its delete then named a receipt handle no longer current).

The slow condition is injected in this benchmark only: ``--receive-delay`` sleeps after each non-empty receive a
pull makes (a slow emulator or a deep queue), ``--hold`` is how long the consumer keeps a batch before its
acknowledge (below the ack deadline). ``--old-moto`` runs moto without its speed-ups
(docs/decisions/moto-receive-cost.md) and reaches it over HTTP, as the earlier drains did: their natural slowness.

Run: ``.venv/bin/python -m bench.duplicates [--messages 5000] [--scenario both]`` (writes bench/out/duplicates.json).
Decision: docs/decisions/pull-leases.md.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from bench.metro import PROJECT, MetroClient
from bench.stack import ROOT, BenchStack
from bench.workload import percentile

cli = typer.Typer(add_completion=False)
DEADLINE = 10  # seconds: Google's default and minimum ack deadline
KINDS: dict[str, dict[str, Any]] = {"plain": {}, "ordered": {"enableMessageOrdering": True},
                                    "exactly-once": {"enableExactlyOnceDelivery": True}}
ORDERING_KEYS = 50


@dataclasses.dataclass
class Receive:
    pull: int  # the server-side pull it belongs to
    at: float  # monotonic, when ReceiveMessage returned: the lease starts here
    receipt: str
    receive_count: int  # SQS's ApproximateReceiveCount
    visibility: int


@dataclasses.dataclass
class Tracer:
    """What the pull service did, recorded by wrapping Queues.receive / change_visibility_batch and PullService._pull
    (thread-local: only the API threads' pulls, not the push pump)."""

    receive_delay: float = 0.0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    local: threading.local = dataclasses.field(default_factory=threading.local)
    pulls: dict[int, tuple[float, float]] = dataclasses.field(default_factory=dict)  # id -> (start, end)
    by_receipt: dict[str, Receive] = dataclasses.field(default_factory=dict)
    by_message: dict[str, list[Receive]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    leases: dict[str, float] = dataclasses.field(default_factory=dict)  # receipt -> when its lease ends (monotonic)

    def install(self) -> Callable[[], None]:
        from chalicelib.service.delivery import decode_received
        from chalicelib.service.pull import PullService
        from chalicelib.store.queues import QueueStore

        targets = ((PullService, "_pull"), (QueueStore, "receive"), (QueueStore, "change_visibility_batch"))
        originals = [getattr(owner, attr) for owner, attr in targets]
        tracer, (pull0, receive0, change0) = self, originals

        def pull(service: Any, name: Any, request: Any) -> Any:
            with tracer.lock:
                number = len(tracer.pulls)
                tracer.pulls[number] = (time.monotonic(), 0.0)
            tracer.local.pull = number
            try:
                return pull0(service, name, request)
            finally:
                tracer.local.pull = None
                with tracer.lock:
                    tracer.pulls[number] = (tracer.pulls[number][0], time.monotonic())

        def receive(queues: Any, url: str, most: int, wait: int, visibility: int) -> Any:
            got = receive0(queues, url, most, wait, visibility)
            number = getattr(tracer.local, "pull", None)
            if number is None:
                return got
            at = time.monotonic()
            with tracer.lock:
                for r in got:
                    rec = Receive(number, at, r.receipt, r.receive_count, visibility)
                    tracer.by_receipt[r.receipt] = rec
                    tracer.leases[r.receipt] = at + visibility
                    for d in decode_received(r.body, r.receipt, r.receive_count):
                        tracer.by_message[d.message_id].append(rec)
            if got and tracer.receive_delay:
                time.sleep(tracer.receive_delay)
            return got

        def change(queues: Any, url: str, changes: Any) -> Any:
            failed = change0(queues, url, changes)
            at, bad = time.monotonic(), set(failed)
            with tracer.lock:
                for i, (receipt, seconds) in enumerate(changes):
                    if i not in bad and receipt in tracer.leases:
                        tracer.leases[receipt] = at + seconds
            return failed

        for (owner, attr), patched in zip(targets, (pull, receive, change), strict=True):
            setattr(owner, attr, patched)

        def uninstall() -> None:
            for (owner, attr), original in zip(targets, originals, strict=True):
                setattr(owner, attr, original)

        return uninstall


@dataclasses.dataclass
class Delivered:
    message_id: str
    receipt: str
    client_pull: int  # this consumer-side pull's number
    answered: float  # monotonic, when the pull's answer arrived
    ack_start: float = 0.0
    ack_end: float = 0.0
    ack_ok: bool = True  # False: the acknowledge request answered with failed ids (exactly-once)


def publish(client: MetroClient, topic: str, messages: int) -> None:
    data = base64.b64encode(b"x" * 256).decode()
    for start in range(0, messages, 100):
        batch = [{"data": data, "attributes": {"n": str(n)}, "orderingKey": f"k{n % ORDERING_KEYS}"}
                 for n in range(start, min(messages, start + 100))]
        client.call("POST", f"projects/{PROJECT}/topics/{topic}:publish", {"messages": batch})


def drain(url: str, sub: str, expected: int, consumers: int, hold: float, queue_counts: Callable[[], tuple[int, int]],
          decode: Callable[[str], str], limit: float) -> list[Delivered]:
    """Pull (maxMessages=100), hold the batch ``hold`` s, acknowledge; until every message was seen and the queue is
    empty (so a late redelivery is counted too), or ``limit`` s."""
    out: list[Delivered] = []
    seen: set[str] = set()
    lock, numbers = threading.Lock(), iter(range(10**9))
    give_up = time.monotonic() + limit

    def done() -> bool:
        with lock:
            if len(seen) < expected:
                return False
        return queue_counts() == (0, 0)

    def consume() -> None:
        client = MetroClient(url)
        base = f"projects/{PROJECT}/subscriptions/{sub}"
        while time.monotonic() < give_up and not done():
            got = client.call("POST", base + ":pull", {"maxMessages": 100}).get("receivedMessages", [])
            answered = time.monotonic()
            if not got:
                continue
            with lock:
                number = next(numbers)
            batch = [Delivered(m["message"]["messageId"], decode(m["ackId"]), number, answered) for m in got]
            time.sleep(hold)
            ack_start, ok = time.monotonic(), True
            try:
                client.call("POST", base + ":acknowledge", {"ackIds": [m["ackId"] for m in got]})
            except RuntimeError:  # exactly-once: some ids failed (their lease ended); they come again
                ok = False
            ack_end = time.monotonic()
            with lock:
                for d in batch:
                    d.ack_start, d.ack_end, d.ack_ok = ack_start, ack_end, ok
                    seen.add(d.message_id)
                out.extend(batch)

    threads = [threading.Thread(target=consume, name=f"dup-consumer-{n}") for n in range(consumers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def explain(tracer: Tracer, deliveries: list[Delivered]) -> list[dict[str, Any]]:
    """Every duplicate delivery, traced to the delivery of the same message before it."""
    first: dict[str, Delivered] = {}
    out = []
    for d in sorted(deliveries, key=lambda x: x.answered):
        before = first.get(d.message_id)
        if before is None:
            first[d.message_id] = d
            continue
        r1, r2 = tracer.by_receipt[before.receipt], tracer.by_receipt[d.receipt]
        start, end = tracer.pulls[r1.pull]
        out.append({
            "message": d.message_id, "pull": r1.pull, "client_pull": before.client_pull,
            "receive_in_pull_s": round(r1.at - start, 3), "pull_s": round(end - start, 3),
            "ack_after_receive_s": round(before.ack_start - r1.at, 3),
            "ack_after_answer_s": round(before.ack_start - before.answered, 3),
            "lease_s": r1.visibility, "lease_ended_before_ack": before.ack_start > r1.at + r1.visibility,
            "received_again_before_ack": r2.at < before.ack_start, "redelivery_pull": r2.pull,
            "redelivery_receive_count": r2.receive_count})
        first[d.message_id] = d
    return out


def summary(kind: str, tracer: Tracer, deliveries: list[Delivered], expected: int, pulls: range) -> dict[str, Any]:
    dups = explain(tracer, deliveries)
    durations = [tracer.pulls[p][1] - tracer.pulls[p][0] for p in pulls if tracer.pulls[p][1]]
    late = sum(1 for d in deliveries if d.ack_start > tracer.leases.get(d.receipt, float("inf")))
    ours = {d.receipt for d in deliveries}
    refreshed = sum(1 for r in ours if tracer.leases[r] > tracer.by_receipt[r].at + tracer.by_receipt[r].visibility
                    + 0.001)
    return {"kind": kind, "messages": expected, "distinct": len({d.message_id for d in deliveries}),
            "deliveries": len(deliveries), "duplicates": len(dups),
            "per_5000": round(len(dups) * 5000 / expected, 2), "pulls": len(durations),
            "pull_p50_s": round(percentile(durations, 50), 3), "pull_max_s": round(max(durations, default=0), 3),
            "acks_after_lease_end": late, "leases_refreshed": refreshed,
            "acks_refused": sum(1 for d in deliveries if not d.ack_ok),
            "dups_lease_ended_before_ack": sum(1 for x in dups if x["lease_ended_before_ack"]),
            "dups_stale_handle_ack": sum(1 for x in dups if x["received_again_before_ack"]),
            "examples": dups}


def push_count(stack: BenchStack, sub: str, expected: int, limit: float) -> dict[str, Any]:
    inbox = stack.webhook().server.inbox(sub)
    seen: set[str] = set()
    deliveries, give_up, quiet_since = 0, time.monotonic() + limit, time.monotonic()
    while time.monotonic() < give_up and (len(seen) < expected or time.monotonic() - quiet_since < 3):
        try:
            _, m = inbox.get(timeout=0.5)
        except Exception:  # queue.Empty
            continue
        quiet_since = time.monotonic()
        deliveries += 1
        seen.add(m["messageId"])
    dups = deliveries - len(seen)
    return {"kind": "push", "messages": expected, "distinct": len(seen), "deliveries": deliveries,
            "duplicates": dups, "per_5000": round(dups * 5000 / expected, 2)}


def settle(ctx: Any, paths: list[str], quiet: float = 1.5, limit: float = 300) -> None:
    """Wait until fan-out is over: the subscriptions' queue counts have not changed for ``quiet`` s (the drain
    then starts from a full backlog, as the earlier drains did)."""
    from chalicelib.core import names

    urls = [ctx.resources.cached_subscription(names.parse(p, "subscriptions")).queue_url for p in paths]
    last: list[tuple[int, int]] = []
    since, give_up = time.monotonic(), time.monotonic() + limit
    while time.monotonic() < give_up:
        now = [ctx.queues.counts(u) for u in urls]
        if now != last or not all(w for w, _ in now):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.25)


@dataclasses.dataclass
class Scenario:
    name: str
    receive_delay: float
    hold: float
    consumers: int


def run_scenario(stack: BenchStack, scenario: Scenario, messages: int, kinds: list[str],
                 say: Callable[[str], None]) -> list[dict[str, Any]]:
    from chalicelib import runtime
    from chalicelib.core import names

    client = MetroClient(stack.url)
    topic = f"dup-{scenario.name}-{int(time.time())}"
    pulled = [k for k in kinds if k in KINDS]
    subs = {k: f"{topic}-{k}" for k in kinds}

    def extra(sub: str) -> dict[str, Any]:
        kind = next(k for k, s in subs.items() if s == sub)
        if kind == "push":
            return {"pushConfig": {"pushEndpoint": stack.webhook().url(sub)}}
        return KINDS[kind]

    client.create(topic, list(subs.values()), ack_deadline=DEADLINE, extra=extra)
    if "push" in subs:
        stack.wait_for_push(subs["push"])
    publish(client, topic, messages)
    settle(runtime.services().ctx, [f"projects/{PROJECT}/subscriptions/{subs[k]}" for k in pulled])
    results = []
    tracer = Tracer(scenario.receive_delay)
    uninstall = tracer.install()
    try:
        for kind in pulled:
            sub = subs[kind]
            path = f"projects/{PROJECT}/subscriptions/{sub}"
            ctx = runtime.services().ctx
            url = ctx.resources.cached_subscription(names.parse(path, "subscriptions")).queue_url
            first = len(tracer.pulls)

            def counts(ctx: Any = ctx, url: str = url) -> tuple[int, int]:
                waiting, flight = ctx.queues.counts(url)
                return int(waiting), int(flight)

            def receipt(ack_id: str, ctx: Any = ctx, path: str = path) -> str:
                return str(ctx.ack_ids.decode(ack_id, path).receipt)

            got = drain(stack.url, sub, messages, scenario.consumers, scenario.hold, counts, receipt, limit=600)
            results.append(summary(kind, tracer, got, messages, range(first, len(tracer.pulls))))
            say(f"{scenario.name} {kind}: {json.dumps({k: v for k, v in results[-1].items() if k != 'examples'})}")
    finally:
        uninstall()
    if "push" in subs:
        results.append(push_count(stack, subs["push"], messages, limit=120))
        say(f"{scenario.name} push: {json.dumps(results[-1])}")
    return results


def table(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="duplicate deliveries (no fault injected)")
    for col in ("scenario", "kind", "messages", "duplicates", "per 5,000", "pull p50 s", "pull max s",
                "acks after lease end", "leases refreshed", "dups: lease ended", "dups: stale handle"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["scenario"], r["kind"], str(r["messages"]), str(r["duplicates"]), str(r["per_5000"]),
                  *(str(r.get(k, "")) for k in ("pull_p50_s", "pull_max_s", "acks_after_lease_end",
                                                 "leases_refreshed", "dups_lease_ended_before_ack",
                                                 "dups_stale_handle_ack")))
    return t


def scenarios(which: str, receive_delay: float, hold: float, consumers: int) -> Iterator[Scenario]:
    if which in ("fast", "both"):
        yield Scenario("fast", 0.0, 0.0, 1)
    if which in ("slow", "both"):
        yield Scenario("slow", receive_delay, hold, consumers)


@cli.command()
def main(messages: int = typer.Option(5000, help="Messages published to the topic (each subscription gets them)."),
         scenario: str = typer.Option("both", help="fast (no delay, ack at once, one consumer), slow, or both."),
         receive_delay: float = typer.Option(0.3, help="slow: seconds slept after each non-empty receive of a pull."),
         hold: float = typer.Option(8.5, help="slow: seconds a consumer holds a batch before acknowledging it."),
         consumers: int = typer.Option(8, help="slow: consumer threads per subscription."),
         kinds: str = typer.Option("plain,ordered,exactly-once,push", help="Subscription kinds, comma-separated."),
         old_moto: bool = typer.Option(False, "--old-moto", help="moto without its speed-ups, over HTTP."),
         pack_max_messages: int = typer.Option(100, help="METRO_PACK_MAX_MESSAGES (1: a queue message each)."),
         out: Path = typer.Option(ROOT / "bench" / "out" / "duplicates.json", help="Where to write figures.")) -> None:
    """Duplicate deliveries per subscription kind with no fault injected, each one explained."""
    console = Console(width=160)
    os.environ["METRO_PACK_MAX_MESSAGES"] = str(pack_max_messages)  # read by the stack's fan-out as it starts
    if old_moto:  # as the earlier drains ran: moto's own receives, reached over its HTTP port
        os.environ.update({"METRO_MOTO_SPEEDUP": "0", "METRO_LOCAL_INPROCESS": "0"})
    stack = BenchStack(pull_wait_seconds=2.0, moto_speedup=not old_moto)
    rows: list[dict[str, Any]] = []
    try:
        for s in scenarios(scenario, receive_delay, hold, consumers):
            for r in run_scenario(stack, s, messages, kinds.split(","), console.print):
                label = s.name + (" (old moto)" if old_moto else "") + f", packs of {pack_max_messages}"
                rows.append({**dataclasses.asdict(s), **r, "scenario": label})
    finally:
        stack.stop()
    doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "ack_deadline": DEADLINE,
           "old_moto": old_moto, "pack_max_messages": pack_max_messages, "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    console.print(table(rows))
    print(f"wrote {out}")


if __name__ == "__main__":
    cli()
