"""A fault run's history: every operation its clients made and what came of it, in the order the harness saw
the answers, so that a checker (bench/chaos/checker.py) can judge the run against Pub/Sub's guarantees.

Each operation is one JSON object per line (``Recorder`` writes them as they happen; ``read`` loads a file).
Times are the harness's monotonic seconds since the run started: ``t_sent`` when the request went out, ``t``
when its answer came back (or the client gave up). An ``outcome`` is what the client can know:

- ``ok``: the service answered success;
- ``error``: the service refused it for good (a definite 4xx: nothing happened);
- ``unknown``: no answer, a timeout, a reset connection, a 5xx or UNAVAILABLE: it may or may not have happened.

A push delivery is a ``Deliver`` with edge ``push`` and an ack id the harness makes up (``push:<id>:<n>``),
followed by an ``Ack`` (the endpoint answered 2xx) or a ``Modack`` to 0 s (it answered an error: a nack).
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TextIO

OK, ERROR, UNKNOWN = "ok", "error", "unknown"
OUTCOMES = (OK, ERROR, UNKNOWN)
REST, GRPC, STREAM, AMS, PUSH = "rest", "grpc", "grpc-stream", "ams", "push"


@dataclass(frozen=True)
class Message:
    """One message of a publish, as the publisher meant it: ``key`` is unique per message meant."""

    key: str
    ordering_key: str = ""
    seq: int = 0  # order of the message within its ordering key (its publisher's sequence)
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subscription:
    """What the checker must know of a subscription: which rules apply to it."""

    op: ClassVar[str] = "subscription"
    name: str
    edge: str = REST
    ordered: bool = False
    exactly_once: bool = False
    ack_deadline: int = 10
    filter: dict[str, str] = field(default_factory=dict)  # attribute equalities, all must hold
    max_delivery_attempts: int = 0  # > 0: a dead-letter policy; the harness nacks everything it gets
    dead_letter_of: str = ""  # this subscription reads the dead-letter topic of that subscription
    seeks: bool = False  # seeks and snapshots run on it: its duplicates are replays, not faults


@dataclass(frozen=True)
class Publish:
    op: ClassVar[str] = "publish"
    t_sent: float
    t: float
    edge: str
    outcome: str
    messages: tuple[Message, ...]
    ids: tuple[str, ...] = ()  # Metro's message ids, in order, when ok


@dataclass(frozen=True)
class Deliver:
    op: ClassVar[str] = "deliver"
    t: float
    sub: str
    edge: str
    message_id: str
    key: str
    ack_id: str
    attempt: int = 0  # deliveryAttempt when the subscription has a dead-letter policy, else 0
    ordering_key: str = ""
    seq: int = 0
    publish_time: str = ""  # RFC 3339, the service's clock
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ack:
    op: ClassVar[str] = "ack"
    t_sent: float
    t: float
    sub: str
    edge: str
    ack_ids: tuple[str, ...]
    outcome: str
    refused: tuple[str, ...] = ()  # the ack ids refused when the answer names them (exactly-once)


@dataclass(frozen=True)
class Modack:
    op: ClassVar[str] = "modack"
    t_sent: float
    t: float
    sub: str
    edge: str
    ack_ids: tuple[str, ...]
    seconds: int  # 0: a nack
    outcome: str
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    op: ClassVar[str] = "snapshot"
    t_sent: float
    t: float
    sub: str
    name: str
    outcome: str


@dataclass(frozen=True)
class Seek:
    op: ClassVar[str] = "seek"
    t_sent: float
    t: float
    sub: str
    outcome: str
    time: str = ""  # RFC 3339 (a publish time the subscription delivered: the service's clock)
    snapshot: str = ""


@dataclass(frozen=True)
class End:
    """The run stopped: ``drained`` when every subscription settled every acknowledged publish."""

    op: ClassVar[str] = "end"
    t: float
    drained: bool


Op = Subscription | Publish | Deliver | Ack | Modack | Snapshot | Seek | End
KINDS: dict[str, type[Any]] = {k.op: k for k in (Subscription, Publish, Deliver, Ack, Modack, Snapshot, Seek, End)}


def to_json(op: Op) -> str:
    return json.dumps({"op": op.op, **asdict(op)}, separators=(",", ":"))


def from_json(line: str) -> Op:
    raw = json.loads(line)
    kind = KINDS[raw.pop("op")]
    if kind is Publish:
        raw["messages"] = tuple(Message(**m) for m in raw["messages"])
    for name in ("ids", "ack_ids", "refused"):
        if name in raw:
            raw[name] = tuple(raw[name])
    op: Op = kind(**raw)
    return op


def read(path: Path) -> list[Op]:
    return [from_json(line) for line in path.read_text().splitlines() if line.strip()]


class Recorder:
    """Thread-safe: keeps every operation in memory and, when given a file, appends each as a JSON line."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.ops: list[Op] = []
        self._out = out
        self._lock = threading.Lock()

    def add(self, op: Op) -> None:
        with self._lock:
            self.ops.append(op)
            if self._out is not None:
                self._out.write(to_json(op) + "\n")

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None
