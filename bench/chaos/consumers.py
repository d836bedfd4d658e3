"""The fault run's consumers and publish edges: REST pullers, the push endpoint, and (full set) the gRPC and AMS
edges of bench/chaos/edges.py, all reporting to the Traffic's sink.

A REST puller nacks a share of what it gets and acknowledges the rest, retrying an acknowledge whose answer was
lost while its ack ids may still be valid, as Google's clients do. On the dead-letter source it nacks
everything. On an exactly-once subscription it sometimes holds a batch past its deadline on purpose: it
shortens the deadline to 1 s, waits ``stale_wait`` and acknowledges, an acknowledgement Metro must refuse.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from bench.chaos import history as h
from bench.chaos.ledger import EXACTLY_ONCE
from bench.chaos.rest import Client, Failed, failed_ack_ids, outcome_of
from bench.chaos.subscriptions import TOPIC, Sub

if TYPE_CHECKING:
    from bench.chaos.traffic import Traffic

Send = Callable[[list[dict[str, Any]]], list[str]]


def publish_edges(traffic: Traffic) -> list[tuple[str, Send]]:
    """(edge, send) pairs a publisher takes turns with: REST only in the basic set; REST, gRPC, AMS in full."""
    client = Client(traffic.url, traffic.project)

    def rest(messages: list[dict[str, Any]]) -> list[str]:
        ids: list[str] = client.call("POST", f"topics/{TOPIC}:publish", {"messages": messages}).get("messageIds", [])
        return ids

    edges: list[tuple[str, Send]] = [(h.REST, rest)]
    if traffic.plan.subscriptions != "basic":
        from bench.chaos.edge_ams import AmsClient
        from bench.chaos.edge_grpc import GrpcPublisher

        grpc = GrpcPublisher(traffic.url.removeprefix("http://"), traffic.project)
        ams = AmsClient(traffic.ams_url, traffic.project)
        edges += [(h.GRPC, lambda m: grpc.publish(TOPIC, m)), (h.AMS, lambda m: ams.publish(TOPIC, m))]
    return edges


class RestPuller:
    def __init__(self, traffic: Traffic, sub: Sub) -> None:
        self.traffic, self.sub = traffic, sub
        self.client = Client(traffic.url, traffic.project)

    def run(self) -> None:
        traffic, name = self.traffic, self.sub.name
        most = traffic.plan.exactly_once_max_messages if self.sub.kind == EXACTLY_ONCE else 100
        while not traffic.stop.is_set():
            try:
                got = self.client.call("POST", f"subscriptions/{name}:pull", {"maxMessages": most},
                                       timeout=traffic.plan.pull_timeout)
            except Failed as exc:
                traffic.error(f"pull: {exc.kind}")
                traffic.stop.wait(0.2)
                continue
            acks: dict[str, tuple[str, str]] = {}
            nacks: list[str] = []
            for r in got.get("receivedMessages", []):
                ident = traffic.received(name, h.REST, r["ackId"], r["message"], int(r.get("deliveryAttempt", 0)))
                if traffic.should_nack(name):
                    nacks.append(r["ackId"])
                else:
                    acks[r["ackId"]] = ident
            if nacks:
                self._modack(nacks, 0)
            if acks and self.sub.kind == EXACTLY_ONCE and traffic.chance(traffic.plan.stale_rate):
                self._modack(list(acks), 1)
                traffic.stop.wait(1 + traffic.plan.stale_wait)
            if acks:
                self._acknowledge(acks)

    def _modack(self, ack_ids: list[str], seconds: int) -> None:
        t_sent, error, refused = self.traffic.now(), None, tuple[str, ...]()
        try:
            self.client.call("POST", f"subscriptions/{self.sub.name}:modifyAckDeadline",
                             {"ackIds": ack_ids, "ackDeadlineSeconds": seconds})
        except Failed as exc:
            error, refused = exc, tuple(sorted(failed_ack_ids(exc) or ()))
            self.traffic.error(f"modack: {exc.kind}")
        self.traffic.modacked(self.sub.name, h.REST, ack_ids, seconds, t_sent, outcome_of(error), refused)

    def _acknowledge(self, acks: dict[str, tuple[str, str]]) -> None:
        """Acknowledge, retrying through an API restart while the ack ids may still be valid; every attempt goes
        to the sink with its outcome."""
        traffic = self.traffic
        deadline = time.monotonic() + self.sub.ack_deadline
        while not traffic.stop.is_set():
            t_sent = traffic.now()
            try:
                self.client.call("POST", f"subscriptions/{self.sub.name}:acknowledge", {"ackIds": list(acks)})
            except Failed as exc:
                traffic.error(f"acknowledge: {exc.kind}")
                refused = failed_ack_ids(exc)
                outcome = h.ERROR if refused is not None else exc.outcome
                traffic.acknowledged(self.sub.name, h.REST, acks, t_sent, outcome,
                                     set(acks) if refused is None and outcome == h.ERROR else refused or set())
                if outcome == h.UNKNOWN and time.monotonic() < deadline:
                    traffic.stop.wait(0.5)
                    continue
                return
            traffic.acknowledged(self.sub.name, h.REST, acks, t_sent, h.OK, set())
            return


def consumers(traffic: Traffic) -> tuple[list[threading.Thread], list[Callable[[], None]]]:
    """Threads to start and stoppers to call at the end, for every subscription of the plan."""
    threads: list[threading.Thread] = []
    stoppers: list[Callable[[], None]] = []
    for sub in traffic.subs.values():
        if sub.edge == h.REST:
            threads += [threading.Thread(target=RestPuller(traffic, sub).run, daemon=True,
                                         name=f"chaos-pull-{sub.name}-{i}") for i in range(traffic.plan.pullers)]
        elif sub.edge == h.STREAM and traffic.workdir is not None:  # its own process, which the nemesis pauses
            from bench.chaos.puller import PullerProcess

            process = traffic.processes[f"puller-{sub.name}"] = PullerProcess(
                traffic, traffic.url.removeprefix("http://"), traffic.project, sub.name, sub.kind == EXACTLY_ONCE,
                traffic.plan.nack_rate, traffic.started, traffic.workdir / f"puller-{sub.name}.log")
            threads.append(threading.Thread(target=process.start, daemon=True, name=f"chaos-stream-{sub.name}"))
            stoppers.append(process.stop)
        elif sub.edge == h.STREAM:
            from bench.chaos.edge_grpc import StreamingSubscriber

            streaming = StreamingSubscriber(traffic.url.removeprefix("http://"), traffic.project, sub.name, traffic,
                                            exactly_once=sub.kind == EXACTLY_ONCE)
            threads.append(threading.Thread(target=streaming.start, daemon=True, name=f"chaos-stream-{sub.name}"))
            stoppers.append(streaming.stop)
        elif sub.edge == h.AMS:
            from bench.chaos.edge_ams import AmsClient, AmsPuller

            for i in range(traffic.plan.pullers):
                puller = AmsPuller(AmsClient(traffic.ams_url, traffic.project), sub.name, traffic)
                threads.append(threading.Thread(target=puller.run, args=(traffic.stop,), daemon=True,
                                                name=f"chaos-ams-{sub.name}-{i}"))
    if traffic.plan.seek_every:
        from bench.chaos.seeker import Seeker

        threads += [threading.Thread(target=Seeker(traffic, s.name).run, daemon=True, name=f"chaos-seek-{s.name}")
                    for s in traffic.subs.values() if s.seeks]
    return threads, stoppers


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
        with self.server.lock:
            self.server.pushes += 1
            ack_id = f"push:{message.get('messageId', '')}:{self.server.pushes}"
        t_sent = traffic.now()
        ident = traffic.received(sub, h.PUSH, ack_id, message, int(json.loads(body).get("deliveryAttempt") or 0))
        if traffic.should_nack(sub):
            self._answer(503)
            traffic.nacked(sub, h.PUSH, [ack_id], t_sent, h.OK)
            return
        self._answer(204)  # the answer is sent: as acknowledged as a push gets
        traffic.acknowledged(sub, h.PUSH, {ack_id: ident}, t_sent, h.OK, set())

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
        self.lock = threading.Lock()
        self.pushes = 0

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

