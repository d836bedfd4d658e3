"""The fault run's seeks: on a subscription that retains acknowledged messages, in turn a seek to a time (the
publish time of a message it delivered a little earlier: the service's clock, not the harness's) and a snapshot
followed, some seconds later, by a seek to it. Each request goes to the history with its outcome; the checker
then demands that the window each seek opened was delivered again (bench/chaos/checker.py)."""

from __future__ import annotations

import contextlib
import itertools
from typing import TYPE_CHECKING

from bench.chaos import history as h
from bench.chaos.rest import Client, Failed

if TYPE_CHECKING:
    from bench.chaos.traffic import Traffic

LOOKBACK = 50  # seek to the publish time of the delivery this many deliveries ago


class Seeker:
    def __init__(self, traffic: Traffic, sub: str) -> None:
        self.traffic, self.sub = traffic, sub
        self.client = Client(traffic.url, traffic.project)

    def run(self) -> None:
        traffic = self.traffic
        for turn in itertools.count():
            if traffic.stop.wait(traffic.plan.seek_every):
                return
            if turn % 2 == 0:
                self._seek_to_time()
            else:
                self._seek_to_snapshot(f"{self.sub}-{turn}")

    def _seek_to_time(self) -> None:
        with self.traffic.lock:
            recent = self.traffic.recent.get(self.sub, [])
            target = recent[-LOOKBACK] if len(recent) >= LOOKBACK else (recent[0] if recent else "")
        if target:
            self._seek({"time": target}, time=target)

    def _seek_to_snapshot(self, name: str) -> None:
        t_sent, outcome = self.traffic.now(), h.OK
        try:
            self.client.call("PUT", f"snapshots/{name}",
                             {"subscription": f"projects/{self.traffic.project}/subscriptions/{self.sub}"})
        except Failed as exc:
            outcome = exc.outcome
            self.traffic.error(f"snapshot: {exc.kind}")
        self.traffic.history.add(h.Snapshot(t_sent, self.traffic.now(), self.sub, name, outcome))
        if outcome != h.OK or self.traffic.stop.wait(self.traffic.plan.seek_every / 2):
            return
        self._seek({"snapshot": f"projects/{self.traffic.project}/snapshots/{name}"}, snapshot=name)
        with contextlib.suppress(Failed):
            self.client.call("DELETE", f"snapshots/{name}")

    def _seek(self, body: dict[str, str], time: str = "", snapshot: str = "") -> None:
        t_sent, outcome = self.traffic.now(), h.OK
        try:
            self.client.call("POST", f"subscriptions/{self.sub}:seek", body)
        except Failed as exc:
            outcome = exc.outcome
            self.traffic.error(f"seek: {exc.kind}")
        answered = self.traffic.now()
        self.traffic.history.add(h.Seek(t_sent, answered, self.sub, outcome, time, snapshot))
        if time and outcome != h.ERROR:  # it may have acknowledged every message published before ``time``
            with self.traffic.lock:
                self.traffic.ledger.seeked_to_time(self.sub, time, answered)
