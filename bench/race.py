"""`make race`: racing consumers on one subscription of the real local stack.

A publisher publishes batches for ``--seconds`` while 8 puller threads pull from one subscription and, per
message at random, acknowledge it, nack it (modifyAckDeadline 0), extend its deadline and acknowledge it a
little later, or let its deadline expire. Then publishing stops and the pullers acknowledge everything until
the subscription is drained. The run is repeated on an exactly-once subscription. The ledger
(bench/race_ledger.py) then checks: no message held by two pullers at once within its deadline, no ack lost
(a message delivered again after an ack confirmed within its deadline), every published message acked,
each message acked exactly as many times as it was delivered and acked, and on the exactly-once
subscription never more than once. Figures go to bench/out/race.json; non-zero exit on any violation.

    python -m bench.race                # 120 s of racing per subscription
    python -m bench.race --quick        # 20 s per subscription (CI)
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import asdict
from typing import Any

import requests
import typer

from bench.race_ledger import Figures, Hold, Ledger
from tests.stack import ROOT, RunningStack, start_stack

OUT = ROOT / "bench" / "out"
PROJECT = "race"
PULLERS = 8
ACK_DEADLINE = 10  # seconds
EXTEND_TO = 15  # seconds, for the deadlines the pullers extend
ACTIONS = ("ack", "nack", "extend", "expire")
WEIGHTS = (0.55, 0.15, 0.2, 0.1)


class Api:
    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()

    def call(self, method: str, path: str, body: Any = None) -> requests.Response:
        resp = self.session.request(method, f"{self.url}/v1/projects/{PROJECT}/{path}", json=body, timeout=60)
        if resp.status_code >= 500:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
        return resp


def refused_ids(resp: requests.Response, ack_ids: list[str]) -> set[str]:
    """The ack ids an acknowledge or modifyAckDeadline answer reports as failed (ErrorInfo metadata)."""
    if resp.status_code == 200:
        return set()
    details = resp.json().get("error", {}).get("details", [])
    failed = {key for d in details for key in d.get("metadata", {})}
    return failed & set(ack_ids) if failed else set(ack_ids)


class Puller(threading.Thread):
    def __init__(self, number: int, url: str, subscription: str, ledger: Ledger, stop: threading.Event,
                 draining: threading.Event, rng: random.Random) -> None:
        super().__init__(name=f"puller-{number}", daemon=True)
        self.number, self.api, self.sub = number, Api(url), f"subscriptions/{subscription}"
        self.ledger, self.stop, self.draining, self.rng = ledger, stop, draining, rng
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.round()
        except BaseException as exc:  # reported by the runner
            self.error = exc

    def round(self) -> None:
        sent = time.monotonic()
        resp = self.api.call("POST", f"{self.sub}:pull", {"maxMessages": 10})
        answered = time.monotonic()
        received = resp.json().get("receivedMessages", []) if resp.status_code == 200 else []
        holds = [Hold(m["message"]["messageId"], m["ackId"], self.number, sent, answered, sent + ACK_DEADLINE)
                 for m in received]
        self.ledger.add_holds(holds)
        plan: dict[str, list[Hold]] = {"ack": [], "nack": [], "extend": [], "expire": []}
        for hold in holds:
            choice = "ack" if self.draining.is_set() else self.rng.choices(ACTIONS, WEIGHTS)[0]
            plan[choice].append(hold)
        self.nack(plan["nack"])
        self.extend(plan["extend"])
        self.ledger.count("let_expire", len(plan["expire"]))
        for hold in plan["expire"]:
            hold.outcome = "expired"
        self.ack(plan["ack"])
        if plan["extend"]:
            time.sleep(self.rng.uniform(0.5, 2.0))  # work on them past a moment, within the extended deadline
            self.ack(plan["extend"])

    def ack(self, holds: list[Hold]) -> None:
        if not holds:
            return
        ids = [h.ack_id for h in holds]
        sent = time.monotonic()
        resp = self.api.call("POST", f"{self.sub}:acknowledge", {"ackIds": ids})
        self.ledger.acked(holds, sent, time.monotonic(), refused_ids(resp, ids))

    def modify(self, holds: list[Hold], seconds: int) -> tuple[float, set[str]]:
        ids = [h.ack_id for h in holds]
        sent = time.monotonic()
        resp = self.api.call("POST", f"{self.sub}:modifyAckDeadline", {"ackIds": ids, "ackDeadlineSeconds": seconds})
        return sent, refused_ids(resp, ids)

    def nack(self, holds: list[Hold]) -> None:
        if holds:
            sent, refused = self.modify(holds, 0)
            for hold in holds:
                if hold.ack_id not in refused:
                    hold.outcome, hold.released = "nacked", sent
            self.ledger.count("nacked", len(holds) - len(refused))

    def extend(self, holds: list[Hold]) -> None:
        if holds:
            sent, refused = self.modify(holds, EXTEND_TO)
            for hold in holds:
                if hold.ack_id not in refused:
                    hold.expires = max(hold.expires, sent + EXTEND_TO)
            self.ledger.count("extended", len(holds) - len(refused))


def publish_for(api: Api, ledger: Ledger, topic: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    batch = 0
    while time.monotonic() < deadline:
        body = {"messages": [{"data": "cmFjZQ==", "attributes": {"batch": str(batch), "n": str(i)}}
                             for i in range(20)]}
        resp = api.call("POST", f"topics/{topic}:publish", body)
        if resp.status_code == 200:
            ledger.add_published(resp.json()["messageIds"])
        batch += 1
        time.sleep(0.2)


def race(stack: RunningStack, exactly_once: bool, seconds: float, seed: int) -> Figures:
    kind = "exactly-once" if exactly_once else "plain"
    topic, sub = f"race-{kind}", f"race-{kind}-sub"
    api = Api(stack.url)
    api.call("PUT", f"topics/{topic}", {})
    api.call("PUT", f"subscriptions/{sub}", {"topic": f"projects/{PROJECT}/topics/{topic}",
                                            "ackDeadlineSeconds": ACK_DEADLINE,
                                            "enableExactlyOnceDelivery": exactly_once})
    ledger, stop, draining = Ledger(), threading.Event(), threading.Event()
    rng = random.Random(seed)
    pullers = [Puller(n, stack.url, sub, ledger, stop, draining, random.Random(rng.random())) for n in range(PULLERS)]
    started = time.monotonic()
    for puller in pullers:
        puller.start()
    print(f"==> {kind}: {PULLERS} pullers racing for {seconds:.0f} s", flush=True)
    publish_for(api, ledger, topic, seconds)
    draining.set()
    drain_until = time.monotonic() + max(90.0, seconds * 2)  # the exactly-once run drains at ~40 messages/s
    while ledger.pending() and time.monotonic() < drain_until and not any(p.error for p in pullers):
        print(f"    draining: {ledger.pending()} messages not acked yet", flush=True)
        time.sleep(5)
    stop.set()
    for puller in pullers:
        puller.join(timeout=90)
        if puller.error is not None:
            raise RuntimeError(f"{puller.name} failed") from puller.error
    figures = ledger.figures(exactly_once)
    figures.seconds = round(time.monotonic() - started, 1)
    return figures


def failed(f: Figures) -> bool:
    return bool(f.overlapping_holds or f.lost_acks or f.missing or f.acked_more_than_once or f.ack_count_mismatches
                or not f.published)


def main(quick: bool = typer.Option(False, help="20 s of racing per subscription instead of 120 s"),
         seconds: float = typer.Option(0, help="seconds of racing per subscription"),
         seed: int = typer.Option(17, help="the pullers' random seed")) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    duration = seconds or (20 if quick else 120)
    stack = start_stack(OUT / "race-metro.log")
    try:
        results = {("exactly-once" if eo else "plain"): race(stack, eo, duration, seed) for eo in (False, True)}
    finally:
        stack.stop()
    (OUT / "race.json").write_text(json.dumps({k: asdict(v) for k, v in results.items()}, indent=1))
    for kind, f in results.items():
        print(f"{kind}: {f.published} published, {f.deliveries} deliveries in {f.pulls} pulls over {f.seconds} s; "
              f"acked {f.acked}, nacked {f.nacked}, extended {f.extended}, let expire {f.let_expire}, "
              f"redelivered {f.redeliveries}, acks refused {f.acks_refused}")
        print(f"    overlapping holds {f.overlapping_holds}, lost acks {f.lost_acks}, never acked {f.missing}, "
              f"acked twice (exactly-once) {f.acked_more_than_once}, ack count mismatches {f.ack_count_mismatches}")
        for example in f.examples[:5]:
            print(f"    ! {example}")
    print(f"figures: {OUT / 'race.json'}")
    raise typer.Exit(1 if any(failed(f) for f in results.values()) else 0)


if __name__ == "__main__":
    typer.run(main)
