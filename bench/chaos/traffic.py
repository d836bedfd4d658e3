"""The fault run's and the soak's clients: publishers, consumers and a push endpoint, writing one ledger (flow
control and the drain) and one history (bench/chaos/history.py, judged by bench/chaos/checker.py).

One topic and the subscriptions of bench/chaos/subscriptions.py. Each message carries its key ``k``, its
sequence ``seq`` within its publisher (hence within its ordering key, which belongs to one publisher), its send
time ``ts`` and, in the full set, the attributes the filters read. Publishers retry a failed publish until it is
acknowledged, as Google's clients do, each batch through one edge (REST, gRPC or AMS in turn, in the full set);
consumers nack a small share of what they get and acknowledge the rest (bench/chaos/consumers.py).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from bench.chaos import history as h
from bench.chaos.ledger import Ledger
from bench.chaos.rest import Client, Failed
from bench.chaos.subscriptions import DEAD_LETTER_SOURCE, DEAD_LETTER_TOPIC, SETS, TOPIC, Sub, message_attributes
from bench.chaos.timeline import Timeline

PROJECT = "chaos"
DATA = base64.b64encode(b"x" * 64).decode()
OWN_ATTRIBUTES = ("k", "seq", "ts")  # the harness's bookkeeping, kept out of the history's deliveries
LARGE_DATA = base64.b64encode(b"y" * 200).decode()  # 50 of these pass the 7,168 bytes a log item keeps inline


@dataclass
class Plan:
    messages: int
    publishers: int = 3
    batch: int = 50
    ordering_keys: int = 4  # per publisher
    window: int = 2000  # published but not yet acknowledged everywhere: publishers wait beyond it
    rate: float = 0.0  # messages per second across publishers; 0: as fast as the window allows
    nack_rate: float = 0.01  # pullers nack this share of what they get
    # The push endpoint answers 503 to this share: more than 1% of recent nacks makes the push backoff pause the
    # subscription as Google's does (chalicelib/core/queueing/backoff.py), which would measure the backoff, not
    # the faults.
    push_nack_rate: float = 0.002
    pullers: int = 2  # threads per REST pull subscription
    # An exactly-once pull writes one lease per message: a pull of 100 can outlast a client's timeout on a busy
    # machine, and the leases it took then expire unused. Smaller pulls keep it under.
    exactly_once_max_messages: int = 20
    pull_timeout: float = 90.0
    subscriptions: str = "basic"  # bench/chaos/subscriptions.py: basic or full
    large_every: int = 0  # every n-th batch carries bodies past the inline limit (an S3 put per publish); 0: never
    stale_rate: float = 0.0  # share of exactly-once REST batches held past a shortened deadline, then acked
    stale_wait: float = 9.0  # how long past the 1 s deadline they are held (beyond the checker's skew tolerance)
    seek_every: float = 0.0  # seconds between seeks of the replay subscription; 0: none


class Traffic:
    """Publishers, consumers and the push endpoint of one run against the API at ``url``; the consumers' sink."""

    def __init__(self, url: str, plan: Plan, seed: int = 17, project: str = PROJECT, ams_url: str = "",
                 history: TextIO | None = None) -> None:
        self.url, self.plan, self.project, self.ams_url = url, plan, project, ams_url
        self.subs: dict[str, Sub] = {s.name: s for s in SETS[plan.subscriptions]}
        booked = {s.name: s for s in self.subs.values() if s.kind != DEAD_LETTER_SOURCE}
        self.ledger = Ledger({n: s.kind for n, s in booked.items()},
                             {n: (self.subs[s.dead_letter_of].filter if s.dead_letter_of else s.filter)
                              for n, s in booked.items()})
        self.history = h.Recorder(history)
        self.timeline = Timeline()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.rng = random.Random(seed)
        self.started = time.monotonic()
        self.last_push = 0.0  # monotonic time of the last push received
        self.recent: dict[str, list[str]] = {}  # subscription -> publish times delivered lately (the seeker's)
        self._next_batch = 0
        self._batches = (plan.messages + plan.batch - 1) // plan.batch
        self._publishers_done = 0
        self._threads: list[threading.Thread] = []
        self._stoppers: list[Any] = []
        self.trace: TextIO | None = None
        # Set before start: streamed subscriptions then read through a process each (bench/chaos/puller.py,
        # logging here), which the nemesis may pause; by name (``puller-<sub>``).
        self.workdir: Path | None = None
        self.processes: dict[str, Any] = {}
        from bench.chaos.consumers import PushEndpoint  # consumers import this module's Traffic
        self.endpoint = PushEndpoint(self)

    # -- bookkeeping: the consumers' sink (bench/chaos/edges.py Sink) ---------------------------------------
    def now(self) -> float:
        return time.monotonic() - self.started

    def error(self, kind: str) -> None:
        with self.lock:
            self.timeline.error(self.now(), kind)

    def should_nack(self, sub: str) -> bool:
        kind = self.subs[sub].kind
        if kind == DEAD_LETTER_SOURCE:
            return True
        with self.lock:
            return self.rng.random() < (self.plan.push_nack_rate if kind == "push" else self.plan.nack_rate)

    def chance(self, share: float) -> bool:
        with self.lock:
            return self.rng.random() < share

    def received(self, sub: str, edge: str, ack_id: str, message: dict[str, Any], attempt: int,
                 t: float | None = None) -> tuple[str, str]:
        """Record one delivery (``t``: when, if not now: a report from bench/chaos/puller.py's process); returns
        (message id, key)."""
        attrs = message.get("attributes") or {}
        key, mid = attrs.get("k", ""), message.get("messageId", "")
        okey, seq, published = message.get("orderingKey", ""), int(attrs.get("seq", 0)), message.get("publishTime", "")
        self._trace(sub, "got", [mid, key, okey, published])
        kept = {k: v for k, v in attrs.items() if k not in OWN_ATTRIBUTES}  # what filters and dead letters read
        self.history.add(h.Deliver(self.now() if t is None else t, sub, edge, mid, key, ack_id, attempt, okey, seq,
                                   published, kept))
        with self.lock:
            if sub in self.ledger.books:
                source_time = "" if self.subs[sub].dead_letter_of else published  # a forward has its own
                self.ledger.delivered(sub, mid, key, okey, seq, source_time)
            self.timeline.delivered(self.now(), time.time() - float(attrs.get("ts", time.time())))
            if self.subs[sub].seeks and published:
                self.recent.setdefault(sub, []).append(published)
                del self.recent[sub][:-200]
        return mid, key

    def acknowledged(self, sub: str, edge: str, acks: dict[str, tuple[str, str]], t_sent: float, outcome: str,
                     refused: set[str], t: float | None = None) -> None:
        """One acknowledge's answer (at ``t``, if not now): confirmed acks go to the ledger, the others as
        unconfirmed."""
        answered = self.now() if t is None else t
        self.history.add(h.Ack(t_sent, answered, sub, edge, tuple(acks), outcome, tuple(sorted(refused))))
        if sub not in self.ledger.books:
            return
        with self.lock:
            for ack_id, (mid, key) in acks.items():
                if outcome == h.OK and ack_id not in refused:
                    self.ledger.acknowledged(sub, mid, key)
                else:
                    self.ledger.acknowledge_unconfirmed(sub, key)
        self._trace(sub, "ack", [(mid, outcome == h.OK and a not in refused) for a, (mid, _) in acks.items()])

    def nacked(self, sub: str, edge: str, ack_ids: list[str], t_sent: float, outcome: str,
               t: float | None = None) -> None:
        self.modacked(sub, edge, ack_ids, 0, t_sent, outcome, t=t)

    def modacked(self, sub: str, edge: str, ack_ids: list[str], seconds: int, t_sent: float, outcome: str,
                 refused: tuple[str, ...] = (), t: float | None = None) -> None:
        answered = self.now() if t is None else t
        self.history.add(h.Modack(t_sent, answered, sub, edge, tuple(ack_ids), seconds, outcome, refused))
        if seconds == 0:
            self._trace(sub, "nack", ack_ids)

    def _trace(self, sub: str, event: str, detail: Any) -> None:
        """One line per event of the ordered subscription, when a trace file is set (to study a violation)."""
        if self.trace is not None and self.subs[sub].kind == "ordered":
            line = json.dumps([round(self.now(), 3), threading.current_thread().name, event, detail])
            with self.lock:
                self.trace.write(line + "\n")

    def publishing_done(self) -> bool:
        with self.lock:
            return self._publishers_done == self.plan.publishers

    # -- set-up ---------------------------------------------------------------------------------------------
    def create(self, timeout: float = 120) -> None:
        """The topics and the subscriptions (created again if they exist: 409 is fine)."""
        client = Client(self.url, self.project)
        topics = [TOPIC] + ([DEAD_LETTER_TOPIC] if any(s.dead_letter_of for s in self.subs.values()) else [])
        steps: list[tuple[str, Any]] = [(f"topics/{t}", {}) for t in topics] + [
            (f"subscriptions/{s.name}", s.request(self.project, self.endpoint.url(s.name)))
            for s in self.subs.values()]
        deadline = time.monotonic() + timeout
        for path, body in steps:
            while True:
                try:
                    client.call("PUT", path, body)
                    break
                except Failed as exc:
                    if exc.status == 409:
                        break
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        for sub in self.subs.values():
            self.history.add(sub.spec())

    # -- publishers -----------------------------------------------------------------------------------------
    def _take_batch(self) -> int | None:
        with self.lock:
            if self._next_batch >= self._batches:
                return None
            self._next_batch += 1
            return self._next_batch - 1

    def messages(self, publisher: int, batch: int) -> list[dict[str, Any]]:
        out = []
        large = self.plan.large_every and batch % self.plan.large_every == self.plan.large_every - 1
        for i in range(min(self.plan.batch, self.plan.messages - batch * self.plan.batch)):
            seq = batch * self.plan.batch + i
            attrs = {"k": f"m{seq}", "seq": str(seq), "ts": f"{time.time():.6f}"}
            if self.plan.subscriptions != "basic":
                attrs.update(message_attributes(seq))
            out.append({"data": LARGE_DATA if large else DATA,
                        "orderingKey": f"p{publisher}-{seq % self.plan.ordering_keys}", "attributes": attrs})
        return out

    def _wait_turn(self, batch: int) -> bool:
        """Flow control and pacing before ``batch``; False when the run stops."""
        if self.plan.rate:
            due = self.started + batch * self.plan.batch / self.plan.rate
            if self.stop.wait(max(0.0, due - time.monotonic())):
                return False
        while not self.stop.is_set():
            with self.lock:
                if self.ledger.outstanding() < self.plan.window:
                    return True
            time.sleep(0.05)
        return False

    def publish(self, edge: str, send: Any, messages: list[dict[str, Any]]) -> bool:
        """Publish through ``send(messages) -> ids`` until acknowledged (the same messages each time); False when
        the run stops first. Every attempt goes to the history with its outcome."""
        delay, meant = 0.1, tuple(h.Message(m["attributes"]["k"], m["orderingKey"], int(m["attributes"]["seq"]),
                                            dict(m["attributes"])) for m in messages)
        first_sent = None
        while not self.stop.is_set():
            sent = time.monotonic()
            t_sent = self.now()
            first_sent = t_sent if first_sent is None else first_sent
            try:
                ids = send(messages)
            except Failed as exc:
                self.history.add(h.Publish(t_sent, self.now(), edge, exc.outcome, meant))
                self.error(f"publish {edge}: {exc.kind}")
                if exc.outcome == h.ERROR:
                    return True  # refused for good: not acknowledged, so not owed to anyone
                self.stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            self.history.add(h.Publish(t_sent, self.now(), edge, h.OK, meant, tuple(ids)))
            if len(ids) != len(messages):
                self.error("publish: wrong number of ids")
            with self.lock:
                self.ledger.publish_acknowledged([m.key for m in meant], [m.attributes for m in meant], first_sent)
                self.timeline.published(self.now(), len(messages), time.monotonic() - sent)
            return True
        return False

    def _publisher(self, index: int) -> None:
        from bench.chaos.consumers import publish_edges

        edges = publish_edges(self)
        try:
            while (batch := self._take_batch()) is not None:
                edge, send = edges[batch % len(edges)]
                if not self._wait_turn(batch) or not self.publish(edge, send, self.messages(index, batch)):
                    return
        finally:
            with self.lock:
                self._publishers_done += 1

    # -- running --------------------------------------------------------------------------------------------
    def start(self) -> None:
        from bench.chaos.consumers import consumers

        self.started = time.monotonic()
        self._threads = [threading.Thread(target=self._publisher, args=(i,), daemon=True, name=f"chaos-pub-{i}")
                         for i in range(self.plan.publishers)]
        threads, self._stoppers = consumers(self)
        self._threads += threads
        for t in self._threads:
            t.start()

    def finish(self, drained: bool = False) -> None:
        self.stop.set()
        for stopper in self._stoppers:
            stopper()
        for t in self._threads:
            t.join(timeout=40)
        self.endpoint.close()
        self.history.add(h.End(self.now(), drained))
        self.history.close()
