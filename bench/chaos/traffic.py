"""The fault run's and the soak's clients: publishers, pullers and a push endpoint, all writing to one ledger.

One topic with four subscriptions (bench/chaos/ledger.py names their kinds): ``plain`` (pull), ``ordered``
(pull, message ordering), ``exact`` (pull, exactly-once) and ``pushed`` (push to a local endpoint). Each
message carries its key ``k``, its sequence ``seq`` within its publisher (hence within its ordering key, which
belongs to one publisher) and its send time ``ts``. Publishers retry a failed publish until it is
acknowledged, as Google's clients do; pullers nack a small share of what they get and acknowledge the rest;
the push endpoint answers 503 to the same share.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

import requests

from bench.chaos.ledger import EXACTLY_ONCE, ORDERED, PULL, PUSH, Ledger
from bench.chaos.timeline import Timeline

PROJECT, TOPIC = "chaos", "events"
SUBSCRIPTIONS = {"plain": PULL, "ordered": ORDERED, "exact": EXACTLY_ONCE, "pushed": PUSH}
DATA = base64.b64encode(b"x" * 64).decode()


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
    pullers: int = 2  # threads per pull subscription
    ack_deadline: int = 20
    # Exactly-once acks fail once the deadline has passed, and these pullers do not extend deadlines as Google's
    # clients do: on a busy machine a pull of 100 messages (one lease write each) can take most of 20 s.
    exactly_once_ack_deadline: int = 60
    # An exactly-once pull writes one lease per message, one after another: a pull of 100 can outlast a client's
    # timeout on a busy machine, and the leases it took then expire unused. Smaller pulls keep it under.
    exactly_once_max_messages: int = 20
    pull_timeout: float = 90.0


class Failed(Exception):
    """A request that did not succeed: a connection error, a timeout or a non-2xx answer."""

    def __init__(self, kind: str, status: int = 0, body: Any = None) -> None:
        super().__init__(kind)
        self.kind, self.status, self.body = kind, status, body


class Client:
    def __init__(self, url: str, project: str = PROJECT) -> None:
        self.base = f"{url}/v1/projects/{project}"
        self.session = requests.Session()

    def call(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        try:
            resp = self.session.request(method, f"{self.base}/{path}", json=body, timeout=timeout)
        except requests.RequestException as exc:
            self.session = requests.Session()  # the API restarted: new connections
            raise Failed(type(exc).__name__) from exc
        if resp.status_code != 200:
            try:
                payload = resp.json()
            except ValueError:
                payload = resp.text[:200]
            raise Failed(f"HTTP {resp.status_code}", resp.status_code, payload)
        return resp.json() if resp.content else {}


def failed_ack_ids(error: Failed) -> set[str] | None:
    """The ack ids an exactly-once acknowledge refused (Google's ErrorInfo metadata); None: not such an answer."""
    if error.status != 400 or not isinstance(error.body, dict):
        return None
    for detail in error.body.get("error", {}).get("details", []):
        if detail.get("reason") == "EXACTLY_ONCE_ACKID_FAILURE":
            return set(detail.get("metadata", {}))
    return None


class Traffic:
    """Publishers, pullers and the push endpoint of one run against the API at ``url``."""

    def __init__(self, url: str, plan: Plan, seed: int = 17, project: str = PROJECT) -> None:
        self.url, self.plan, self.project = url, plan, project
        self.ledger = Ledger(SUBSCRIPTIONS)
        self.timeline = Timeline()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.rng = random.Random(seed)
        self.started = time.monotonic()
        self.last_push = 0.0  # monotonic time of the last push received
        self._next_batch = 0
        self._batches = (plan.messages + plan.batch - 1) // plan.batch
        self._publishers_done = 0
        self._threads: list[threading.Thread] = []
        self.endpoint = PushEndpoint(self)
        self.trace: TextIO | None = None

    # -- bookkeeping ----------------------------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self.started

    def error(self, kind: str) -> None:
        with self.lock:
            self.timeline.error(self.now(), kind)

    def publishing_done(self) -> bool:
        with self.lock:
            return self._publishers_done == self.plan.publishers

    def _take_batch(self) -> int | None:
        with self.lock:
            if self._next_batch >= self._batches:
                return None
            self._next_batch += 1
            return self._next_batch - 1

    def _nack(self, push: bool = False) -> bool:
        with self.lock:
            return self.rng.random() < (self.plan.push_nack_rate if push else self.plan.nack_rate)

    def _deadline(self, sub: str) -> int:
        exact = SUBSCRIPTIONS[sub] == EXACTLY_ONCE
        return self.plan.exactly_once_ack_deadline if exact else self.plan.ack_deadline

    # -- set-up ---------------------------------------------------------------------------------------------
    def create(self, timeout: float = 120) -> None:
        """The topic and the subscriptions (created again if they exist: 409 is fine)."""
        client, topic = Client(self.url, self.project), f"projects/{self.project}/topics/{TOPIC}"
        bodies: dict[str, dict[str, Any]] = {
            "plain": {}, "ordered": {"enableMessageOrdering": True}, "exact": {"enableExactlyOnceDelivery": True},
            "pushed": {"pushConfig": {"pushEndpoint": self.endpoint.url("pushed")}}}
        steps: list[tuple[str, Any]] = [(f"topics/{TOPIC}", {})] + [
            (f"subscriptions/{sub}", {"topic": topic, "ackDeadlineSeconds": self._deadline(sub), **extra})
            for sub, extra in bodies.items()]
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

    # -- publishers -----------------------------------------------------------------------------------------
    def _messages(self, publisher: int, batch: int) -> list[dict[str, Any]]:
        out = []
        for i in range(min(self.plan.batch, self.plan.messages - batch * self.plan.batch)):
            seq = batch * self.plan.batch + i
            out.append({"data": DATA, "orderingKey": f"p{publisher}-{seq % self.plan.ordering_keys}",
                        "attributes": {"k": f"m{seq}", "seq": str(seq), "ts": f"{time.time():.6f}"}})
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

    def _publish(self, client: Client, messages: list[dict[str, Any]]) -> bool:
        """Publish until acknowledged (the same messages each time); False when the run stops first."""
        delay = 0.1
        while not self.stop.is_set():
            sent = time.monotonic()
            try:
                got = client.call("POST", f"topics/{TOPIC}:publish", {"messages": messages})
            except Failed as exc:
                self.error(f"publish: {exc.kind}")
                if 400 <= exc.status < 500 and exc.status not in (408, 429):
                    return True  # refused for good: not acknowledged, so not owed to anyone
                self.stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            if len(got.get("messageIds", [])) != len(messages):
                self.error("publish: wrong number of ids")
            with self.lock:
                self.ledger.publish_acknowledged([m["attributes"]["k"] for m in messages])
                self.timeline.published(self.now(), len(messages), time.monotonic() - sent)
            return True
        return False

    def _publisher(self, index: int) -> None:
        client = Client(self.url, self.project)
        try:
            while (batch := self._take_batch()) is not None:
                if not self._wait_turn(batch) or not self._publish(client, self._messages(index, batch)):
                    return
        finally:
            with self.lock:
                self._publishers_done += 1

    # -- consumers ------------------------------------------------------------------------------------------
    def _trace(self, sub: str, event: str, detail: Any) -> None:
        """One line per event of the ordered subscription, when a trace file is set (to study a violation)."""
        if self.trace is not None and SUBSCRIPTIONS[sub] == ORDERED:
            line = json.dumps([round(self.now(), 3), threading.current_thread().name, event, detail])
            with self.lock:
                self.trace.write(line + "\n")

    def received(self, sub: str, message: dict[str, Any]) -> tuple[str, str]:
        """Record one delivery; returns (message id, key)."""
        attrs = message.get("attributes", {})
        key, mid = attrs.get("k", ""), message.get("messageId", "")
        self._trace(sub, "got", [mid, key, message.get("orderingKey"), message.get("publishTime")])
        with self.lock:
            self.ledger.delivered(sub, mid, key, message.get("orderingKey", ""), int(attrs.get("seq", 0)))
            self.timeline.delivered(self.now(), time.time() - float(attrs.get("ts", time.time())))
        return mid, key

    def _acknowledge(self, client: Client, sub: str, acks: dict[str, tuple[str, str]]) -> None:
        """Acknowledge, retrying through an API restart while the ack ids may still be valid, as Google's clients
        do; confirmed acks go to the ledger, the others as unconfirmed."""
        refused: set[str] = set(acks)
        deadline = time.monotonic() + self._deadline(sub)
        while time.monotonic() < deadline and not self.stop.is_set():
            try:
                client.call("POST", f"subscriptions/{sub}:acknowledge", {"ackIds": list(acks)})
                refused = set()
                break
            except Failed as exc:
                self.error(f"acknowledge: {exc.kind}")
                if exc.status == 400:
                    refused = failed_ack_ids(exc) or set(acks)
                    break
                self.stop.wait(0.5)
        with self.lock:
            for ack_id, (mid, key) in acks.items():
                if ack_id in refused:
                    self.ledger.acknowledge_unconfirmed(sub, key)
                else:
                    self.ledger.acknowledged(sub, mid, key)
        self._trace(sub, "ack", [(acks[a][0], a not in refused) for a in acks])

    def _puller(self, sub: str) -> None:
        client = Client(self.url, self.project)
        while not self.stop.is_set():
            try:
                most = self.plan.exactly_once_max_messages if SUBSCRIPTIONS[sub] == EXACTLY_ONCE else 100
                got = client.call("POST", f"subscriptions/{sub}:pull", {"maxMessages": most},
                                  timeout=self.plan.pull_timeout)
            except Failed as exc:
                self.error(f"pull: {exc.kind}")
                self.stop.wait(0.2)
                continue
            acks, nacks = {}, {}
            for r in got.get("receivedMessages", []):
                ident = self.received(sub, r["message"])
                if self._nack():
                    nacks[r["ackId"]] = ident[0]
                else:
                    acks[r["ackId"]] = ident
            if nacks:
                self._trace(sub, "nack", list(nacks.values()))
                try:
                    client.call("POST", f"subscriptions/{sub}:modifyAckDeadline",
                                {"ackIds": list(nacks), "ackDeadlineSeconds": 0})
                except Failed as exc:
                    self.error(f"nack: {exc.kind}")
            if acks:
                self._acknowledge(client, sub, acks)

    # -- running --------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.started = time.monotonic()
        self._threads = [threading.Thread(target=self._publisher, args=(i,), daemon=True, name=f"chaos-pub-{i}")
                         for i in range(self.plan.publishers)]
        self._threads += [threading.Thread(target=self._puller, args=(sub,), daemon=True, name=f"chaos-pull-{sub}-{i}")
                          for sub, kind in SUBSCRIPTIONS.items() if kind != PUSH for i in range(self.plan.pullers)]
        for t in self._threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(timeout=40)
        self.endpoint.close()


class _PushHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _PushServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        traffic = self.server.traffic
        traffic.last_push = time.monotonic()
        try:
            message = json.loads(body)["message"]
        except (ValueError, KeyError, TypeError):
            traffic.error("push: bad body")
            self._answer(400)
            return
        sub = self.path.strip("/")
        mid, key = traffic.received(sub, message)
        if traffic._nack(push=True):
            self._answer(503)
            return
        self._answer(204)
        with traffic.lock:  # the answer is sent: as acknowledged as a push gets
            traffic.ledger.acknowledged(sub, mid, key)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _PushServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, traffic: Traffic) -> None:
        super().__init__(("127.0.0.1", 0), _PushHandler)
        self.traffic = traffic

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A pump killed mid-request resets its connection: expected here; anything else is a harness error."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            self.traffic.error(f"push endpoint: {error!r}")


class PushEndpoint:
    def __init__(self, traffic: Traffic) -> None:
        self.server = _PushServer(traffic)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name="chaos-push", daemon=True)
        self.thread.start()

    def url(self, sub: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{sub}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
