"""The ledger of `make race` (bench/race.py): every delivery the racing pullers saw and what they did with it,
and the checks over it once the run has drained.

Times are the harness's own monotonic clock, read before a request is sent and after its answer came back,
and every check uses them so that it cannot blame Metro for the harness's delays: a delivery's deadline
ends no earlier than ``pull sent + ack deadline`` (or ``modifyAckDeadline sent + seconds``), an ack or nack
takes effect no earlier than when it was sent, and a second delivery happened no later than when its pull
answered.
"""

from __future__ import annotations

import base64
import collections
import json
import threading
from dataclasses import dataclass, field

INFINITY = float("inf")


def opened(ack_id: str) -> str:
    """What an ack id says in the clear (it is signed, not encrypted; core/queueing/ackids.py): lease, receipt,
    attempt."""
    try:
        body = ack_id.split(".", maxsplit=1)[0]
        _, _, lease, _, receipt, _, attempt = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        return f"lease {lease} receipt ...{str(receipt)[-10:]} attempt {attempt}"
    except ValueError:
        return f"ack id ...{ack_id[-12:]}"


@dataclass
class Hold:
    """One delivery of a message to one puller."""

    message_id: str
    ack_id: str
    puller: int
    pull_sent: float
    pull_answered: float
    expires: float  # the earliest its deadline can end
    released: float = INFINITY  # when the ack or nack that ended the hold was sent
    outcome: str = "held"  # acked, nacked, expired, ack-refused

    @property
    def ends(self) -> float:
        return min(self.released, self.expires)


@dataclass
class Figures:
    published: int = 0
    pulls: int = 0
    deliveries: int = 0
    acked: int = 0
    nacked: int = 0
    extended: int = 0
    let_expire: int = 0
    acks_refused: int = 0
    redeliveries: int = 0
    overlapping_holds: int = 0
    lost_acks: int = 0
    missing: int = 0
    acked_more_than_once: int = 0
    ack_count_mismatches: int = 0
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)


class Ledger:
    """Thread-safe record of publishes, deliveries, and the acks Metro confirmed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.published: set[str] = set()
        self.holds: dict[str, list[Hold]] = collections.defaultdict(list)
        self.acks_ok: collections.Counter[str] = collections.Counter()
        self.confirmed: dict[str, float] = {}  # message -> when an in-deadline ack was confirmed (earliest)
        self.counts: collections.Counter[str] = collections.Counter()

    def add_published(self, ids: list[str]) -> None:
        with self._lock:
            self.published.update(ids)

    def add_holds(self, holds: list[Hold]) -> None:
        with self._lock:
            self.counts["pulls"] += 1
            for hold in holds:
                self.holds[hold.message_id].append(hold)

    def count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.counts[what] += n

    def acked(self, holds: list[Hold], sent: float, answered: float, refused: set[str]) -> None:
        """An acknowledge request answered: ``refused`` are the ack ids Metro reported as failed."""
        with self._lock:
            for hold in holds:
                if hold.ack_id in refused:
                    hold.outcome = "ack-refused"
                    continue
                hold.outcome, hold.released = "acked", min(hold.released, sent)
                self.acks_ok[hold.message_id] += 1
                if answered < hold.expires:  # surely applied within the deadline: Metro must not redeliver
                    self.confirmed[hold.message_id] = min(self.confirmed.get(hold.message_id, INFINITY), answered)

    def pending(self) -> int:
        with self._lock:
            return len(self.published - set(self.acks_ok))

    def figures(self, exactly_once: bool) -> Figures:
        with self._lock:
            f = Figures(published=len(self.published), pulls=self.counts["pulls"], nacked=self.counts["nacked"],
                        extended=self.counts["extended"], let_expire=self.counts["let_expire"])
            for message_id, holds in self.holds.items():
                self._check_message(f, message_id, sorted(holds, key=lambda h: h.pull_sent), exactly_once)
            f.missing = len(self.published - set(self.acks_ok))
            if f.missing:
                f.examples.append(f"never acked: {sorted(self.published - set(self.acks_ok))[:3]}")
            return f

    def _check_message(self, f: Figures, message_id: str, holds: list[Hold], exactly_once: bool) -> None:
        f.deliveries += len(holds)
        f.redeliveries += len(holds) - 1
        acked = sum(1 for h in holds if h.outcome == "acked")
        f.acked += acked
        f.acks_refused += sum(1 for h in holds if h.outcome == "ack-refused")
        if acked != self.acks_ok[message_id]:
            f.ack_count_mismatches += 1
        if exactly_once and acked > 1:
            f.acked_more_than_once += 1
            f.examples.append(f"{message_id} acknowledged {acked} times on an exactly-once subscription")
        for i, one in enumerate(holds):
            for other in holds[:i]:
                # Each was received by the time its pull answered, and held until it ended: both answered before
                # either ended means both held it at once (the order of the pulls' sends says nothing).
                if one.pull_answered < other.ends and other.pull_answered < one.ends:
                    f.overlapping_holds += 1
                    f.examples.append(f"{message_id} held by pullers {other.puller} and {one.puller} at once: "
                                      f"{self.timeline(holds)}")
        confirmed = self.confirmed.get(message_id, INFINITY)
        lost = [h for h in holds if h.pull_sent > confirmed]
        if lost:
            f.lost_acks += 1
            f.examples.append(f"{message_id} delivered again after an ack confirmed within its deadline: "
                              f"{self.timeline(holds)}")

    def timeline(self, holds: list[Hold]) -> str:
        """Each delivery: puller, pull sent-answered, deadline, release, outcome (seconds from the first pull)."""
        t0 = holds[0].pull_sent
        return "; ".join(f"#{h.puller} pulled {h.pull_sent - t0:.2f}-{h.pull_answered - t0:.2f} expires "
                         f"{h.expires - t0:.2f} released {h.released - t0:.2f} {h.outcome} {opened(h.ack_id)}"
                         for h in holds)
