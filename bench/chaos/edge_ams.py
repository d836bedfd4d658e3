"""The fault run's AMS edge: publish, pull, acknowledge and nack through the ARGO Messaging Service dialect
(docs/ams.md) over ``requests``.

AMS's wire differs from Google's REST: the token goes in ``x-api-key``, numbers and booleans are strings, and a
pulled message carries only ``attributes``, ``data``, ``messageId`` and ``publishTime``, so the ordering key
and the delivery attempt are never seen here (the attempt is reported as 0). AMS has no nack of its own; Metro's
AMS endpoint serves Google's per-message ``:modifyAckDeadline`` (with ``ackIds``), which nacks with 0 s.
Messages are published with their ordering key, which Metro's AMS endpoint accepts as Google's does.

Each call is one attempt: a connection error, a timeout or a 5xx is an unknown outcome, a 4xx (other than 408 and
429) a definite refusal (``Failed.outcome``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import requests
import urllib3

from bench.chaos.edges import Failed, Sink
from bench.chaos.history import AMS, ERROR
from bench.chaos.rest import answer, failed_ack_ids, outcome_of

PULL_TIMEOUT = 90.0
CALL_TIMEOUT = 30.0


class AmsClient:
    """One project of the AMS endpoint at ``url`` (``https://host:port``); ``verify`` as requests takes it (the
    local endpoint's certificate is self-signed: False, or the path of that certificate)."""

    def __init__(self, url: str, project: str, token: str = "chaos", verify: bool | str = False) -> None:
        self.base = f"{url.rstrip('/')}/v1/projects/{project}"
        self.project, self.token, self.verify = project, token, verify
        self.session = self._session()
        if verify is False:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    def _session(self) -> requests.Session:
        session = requests.Session()
        session.headers.update({"x-api-key": self.token, "Content-Type": "application/json"})
        return session

    def call(self, method: str, path: str, body: Any = None, timeout: float = CALL_TIMEOUT) -> Any:
        """One request; its JSON answer, or ``Failed`` (kind, status, body) as the REST client raises it."""
        try:
            # verify per request: a CA bundle named in the environment would win over the session's
            resp = self.session.request(method, f"{self.base}/{path}", data=json.dumps(body or {}), timeout=timeout,
                                        verify=self.verify)
        except requests.RequestException as exc:
            self.session = self._session()  # the API restarted: new connections
            raise Failed(type(exc).__name__) from exc
        return answer(resp, "AMS HTTP")

    def publish(self, topic: str, messages: list[dict[str, Any]]) -> list[str]:
        """Publish REST-shaped messages (``data`` in base64) to ``topic`` (its id); their ids."""
        body = {"messages": [{k: m[k] for k in ("data", "attributes", "orderingKey") if m.get(k)} for m in messages]}
        return list(self.call("POST", f"topics/{topic}:publish", body).get("messageIds", []))

    def pull(self, sub: str, max_messages: int, timeout: float = PULL_TIMEOUT) -> list[tuple[str, dict[str, Any], int]]:
        """(ack id, REST-shaped message, delivery attempt: always 0, AMS shows none) of one pull that waits."""
        answer = self.call("POST", f"subscriptions/{sub}:pull",
                           {"maxMessages": str(max_messages), "returnImmediately": "false"}, timeout)
        return [(r["ackId"], dict(r["message"]), int(r.get("deliveryAttempt", 0) or 0))
                for r in answer.get("receivedMessages", [])]

    def acknowledge(self, sub: str, ack_ids: list[str]) -> None:
        self.call("POST", f"subscriptions/{sub}:acknowledge", {"ackIds": ack_ids})

    def nack(self, sub: str, ack_ids: list[str]) -> None:
        """Metro's per-message ``:modifyAckDeadline`` to 0 s (real AMS has no such call)."""
        self.call("POST", f"subscriptions/{sub}:modifyAckDeadline", {"ackIds": ack_ids, "ackDeadlineSeconds": "0"})


def refused_by(error: Failed, ack_ids: list[str]) -> set[str]:
    """The ack ids a failed acknowledge refused: those its exactly-once error names, or all of them for another
    definite refusal, or none when the outcome is unknown."""
    named = failed_ack_ids(error)
    if named is not None:
        return named & set(ack_ids)
    return set(ack_ids) if error.outcome == ERROR else set()


class AmsPuller:
    """Pulls ``sub`` through ``client`` until stopped, reporting to ``sink``: what the sink nacks is nacked in one
    call, the rest acknowledged in one call, per pull."""

    def __init__(self, client: AmsClient, sub: str, sink: Sink, max_messages: int = 100,
                 ack_retry: float = 8.0) -> None:
        self.client, self.sub, self.sink, self.max_messages = client, sub, sink, max_messages
        self.ack_retry = ack_retry  # seconds to retry an acknowledge of unknown outcome (within the deadline)
        self.stop = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self.stop = stop
        delay = 0.1
        while not stop.is_set():
            try:
                got = self.client.pull(self.sub, self.max_messages)
            except Failed as exc:
                self.sink.error(f"pull {AMS}: {exc.kind}")
                stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            delay = 0.1
            self.settle(got)

    def settle(self, got: list[tuple[str, dict[str, Any], int]]) -> None:
        """Report one pull's deliveries, then nack and acknowledge them as the sink decides."""
        acks: dict[str, tuple[str, str]] = {}
        nacks: list[str] = []
        for ack_id, message, attempt in got:
            ids = self.sink.received(self.sub, AMS, ack_id, message, attempt)
            if self.sink.should_nack(self.sub):
                nacks.append(ack_id)
            else:
                acks[ack_id] = ids
        if nacks:
            self.nack(nacks)
        if acks:
            self.acknowledge(acks)

    def acknowledge(self, acks: dict[str, tuple[str, str]]) -> None:
        """Acknowledge, again while the outcome is unknown and the ack ids may still be valid (as Google's clients
        retry through a restart); each attempt is reported with its own outcome."""
        deadline = time.monotonic() + self.ack_retry
        while True:
            t_sent, error = self.sink.now(), None
            try:
                self.client.acknowledge(self.sub, list(acks))
            except Failed as exc:
                error = exc
                self.sink.error(f"acknowledge {AMS}: {exc.kind}")
            refused = refused_by(error, list(acks)) if error is not None else set()
            self.sink.acknowledged(self.sub, AMS, acks, t_sent, outcome_of(error), refused)
            if error is None or error.outcome == ERROR or time.monotonic() > deadline or self.stop.wait(0.5):
                return

    def nack(self, ack_ids: list[str]) -> None:
        t_sent, error = self.sink.now(), None
        try:
            self.client.nack(self.sub, ack_ids)
        except Failed as exc:
            error = exc
            self.sink.error(f"nack {AMS}: {exc.kind}")
        self.sink.nacked(self.sub, AMS, ack_ids, t_sent, outcome_of(error))
