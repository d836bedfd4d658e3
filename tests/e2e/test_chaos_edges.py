"""The fault run's gRPC and AMS client edges (bench/chaos/edge_grpc.py, bench/chaos/edge_ams.py) against the
real local stack: batches published through both edges reach StreamingPull (plain and exactly-once) and AMS
pulls, every key is received and acknowledged with the outcome each edge can know, nacks come back, a second
exactly-once ack is refused, and failed publishes carry HTTP-like statuses on both edges."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.chaos.edge_ams import AmsClient, AmsPuller
from bench.chaos.edge_grpc import GrpcPublisher, StreamingSubscriber
from bench.chaos.edges import Failed
from bench.chaos.history import AMS, ERROR, OK, STREAM, UNKNOWN
from bench.chaos.rest import Client
from tests.e2e.polling import read_until
from tests.stack import RunningStack

pytestmark = pytest.mark.e2e
PROJECT = "chaos-edges"
NACKED = {"g1", "a1"}  # keys whose first delivery is nacked, one per publishing edge


@dataclass
class Ack:
    sub: str
    edge: str
    acks: dict[str, tuple[str, str]]
    outcome: str
    refused: set[str]


@dataclass
class RecordingSink:
    """A Sink that keeps everything reported; nacks the first delivery of the keys in NACKED."""

    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    deliveries: list[tuple[str, str, str, dict[str, Any], int]] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    nacks: list[tuple[str, str, list[str], str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_key: threading.local = field(default_factory=threading.local)

    def now(self) -> float:
        return time.monotonic() - self.started

    def should_nack(self, sub: str) -> bool:
        key = self.last_key.value
        with self.lock:
            return key in NACKED and sum(d[0] == sub and d[3]["attributes"]["k"] == key for d in self.deliveries) == 1

    def received(self, sub: str, edge: str, ack_id: str, message: dict[str, Any], attempt: int) -> tuple[str, str]:
        key = message["attributes"]["k"]
        self.last_key.value = key
        with self.lock:
            self.deliveries.append((sub, edge, ack_id, message, attempt))
        return message["messageId"], key

    def acknowledged(self, sub: str, edge: str, acks: dict[str, tuple[str, str]], t_sent: float, outcome: str,
                     refused: set[str]) -> None:
        assert t_sent <= self.now()
        with self.lock:
            self.acks.append(Ack(sub, edge, dict(acks), outcome, set(refused)))

    def nacked(self, sub: str, edge: str, ack_ids: list[str], t_sent: float, outcome: str) -> None:
        with self.lock:
            self.nacks.append((sub, edge, list(ack_ids), outcome))

    def error(self, kind: str) -> None:
        with self.lock:
            self.errors.append(kind)

    def acked_keys(self, sub: str, outcome: str) -> set[str]:
        with self.lock:
            return {key for a in self.acks if a.sub == sub and a.outcome == outcome
                    for ack_id, (_, key) in a.acks.items() if ack_id not in a.refused}

    def refused_keys(self, sub: str) -> set[str]:
        with self.lock:
            return {key for a in self.acks if a.sub == sub for ack_id, (_, key) in a.acks.items()
                    if ack_id in a.refused}

    def story(self, sub: str, keys: set[str]) -> list[str]:
        """What happened to ``keys`` on ``sub`` (a failure's explanation)."""
        with self.lock:
            got = [f"got {d[3]['attributes']['k']} {d[2][-8:]}" for d in self.deliveries
                   if d[0] == sub and d[3]["attributes"]["k"] in keys]
            acked = [f"ack {a.outcome} {[(i[-8:], k) for i, (_, k) in a.acks.items()]} refused {len(a.refused)}"
                     for a in self.acks if a.sub == sub and any(k in keys for _, k in a.acks.values())]
            return got + acked + self.errors

    def keys(self, sub: str) -> list[str]:
        with self.lock:
            return [d[3]["attributes"]["k"] for d in self.deliveries if d[0] == sub]


class TwiceAcked(StreamingSubscriber):
    """Acknowledges the message of key ``again`` a second time once the first ack has been answered."""

    again = "g2"

    def acknowledge(self, message: Any, ids: tuple[str, str]) -> None:
        super().acknowledge(message, ids)
        if ids[1] == self.again:
            super().acknowledge(message, ids)


def batch(prefix: str, start: int, size: int) -> list[dict[str, Any]]:
    return [{"data": "eA==", "orderingKey": "", "attributes": {"k": f"{prefix}{i}", "seq": str(i)}}
            for i in range(start, start + size)]


@pytest.fixture
def names(stack: RunningStack, unique: str) -> dict[str, str]:
    """A topic and its subscriptions, made over REST: stream (plain), stream-eo and ams-eo (exactly-once), ams."""
    rest = Client(stack.url, PROJECT)
    made = {"topic": f"t-{unique}", "stream": f"stream-{unique}", "stream-eo": f"stream-eo-{unique}",
            "ams": f"ams-{unique}", "ams-eo": f"ams-eo-{unique}"}
    rest.call("PUT", f"topics/{made['topic']}", {})
    for role in ("stream", "stream-eo", "ams", "ams-eo"):
        rest.call("PUT", f"subscriptions/{made[role]}", {"topic": f"projects/{PROJECT}/topics/{made['topic']}",
                                                           "enableExactlyOnceDelivery": role.endswith("-eo")})
    return made


@pytest.fixture
def ams(stack: RunningStack) -> AmsClient:
    return AmsClient(f"https://{stack.ams_host}", PROJECT, verify=stack.ams_cert)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def consumers(stack: RunningStack, names: dict[str, str], ams: AmsClient, sink: RecordingSink) -> Iterator[None]:
    stop = threading.Event()
    streams = [StreamingSubscriber(stack.host, PROJECT, names["stream"], sink, exactly_once=False),
               StreamingSubscriber(stack.host, PROJECT, names["stream-eo"], sink, exactly_once=True)]
    pullers = [threading.Thread(target=AmsPuller(ams, names[role], sink, max_messages=20).run, args=(stop,),
                                daemon=True) for role in ("ams", "ams-eo")]
    for runner in [*streams, *pullers]:
        runner.start()
    yield
    stop.set()
    for stream in streams:
        stream.stop()
    for puller in pullers:
        puller.join(timeout=100)
        assert not puller.is_alive()


@pytest.mark.usefixtures("consumers")
def test_both_edges_publish_and_every_consumer_edge_acknowledges_every_key(
        stack: RunningStack, names: dict[str, str], ams: AmsClient, sink: RecordingSink) -> None:
    grpc = GrpcPublisher(stack.host, PROJECT)
    ids: list[str] = []
    for start in (0, 10, 20):
        ids += grpc.publish(names["topic"], batch("g", start, 10))
        ids += ams.publish(names["topic"], batch("a", start, 10))
    grpc.close()
    keys = {f"{p}{i}" for p in "ga" for i in range(30)}
    assert len(set(ids)) == 60
    expected = {"stream": UNKNOWN, "stream-eo": OK, "ams": OK, "ams-eo": OK}

    def settled() -> dict[str, set[str]]:
        return {role: sink.acked_keys(names[role], outcome) for role, outcome in expected.items()}

    got = read_until(settled, lambda s: all(v >= keys for v in s.values()), timeout=90)
    assert {role: keys - acked for role, acked in got.items()} == {role: set() for role in expected}

    expected_of = {names[role]: outcome for role, outcome in expected.items()}
    edges = {names["stream"]: STREAM, names["stream-eo"]: STREAM, names["ams"]: AMS, names["ams-eo"]: AMS}
    with sink.lock:
        for sub, edge, ack_id, message, attempt in sink.deliveries:
            assert edge == edges[sub] and ack_id and attempt == 0
            assert message["messageId"] in ids and message["data"] == "eA=="
            assert message["publishTime"].endswith("Z") and len(message["publishTime"]) == 24
        assert all(a.outcome == expected_of[a.sub] and not a.refused for a in sink.acks)
        nacks = [(sub, outcome) for sub, _, _, outcome in sink.nacks]
    for role in expected:  # a nacked delivery comes back
        got_keys = sink.keys(names[role])
        assert all(got_keys.count(k) >= 2 for k in NACKED), (role, sorted(got_keys))
    assert sorted(nacks) == sorted([(names["stream"], UNKNOWN)] * 2 + [(names["stream-eo"], OK)] * 2
                                   + [(names["ams"], OK)] * 2 + [(names["ams-eo"], OK)] * 2)


def test_a_second_exactly_once_ack_over_the_stream_is_refused(
        stack: RunningStack, names: dict[str, str], sink: RecordingSink) -> None:
    """Alone in its Acknowledge RPC: google-cloud-pubsub batches acks, and an RPC that refuses one ack id leaves
    the others of the batch unknown (AcknowledgeStatus.OTHER)."""
    stream = TwiceAcked(stack.host, PROJECT, names["stream-eo"], sink, exactly_once=True)
    stream.start()
    grpc = GrpcPublisher(stack.host, PROJECT)
    grpc.publish(names["topic"], batch("g", 2, 1))
    grpc.close()

    def twice() -> list[Ack]:
        with sink.lock:
            return [a for a in sink.acks if a.sub == names["stream-eo"]]

    try:
        acks = read_until(twice, lambda a: len(a) >= 2, timeout=60)
    finally:
        stream.stop()
    assert [a.outcome for a in acks] == [OK, ERROR]
    assert acks[1].refused == set(acks[1].acks) and acks[0].acks == acks[1].acks


def test_a_publish_to_a_missing_topic_fails_with_404_on_both_edges(stack: RunningStack, ams: AmsClient) -> None:
    grpc = GrpcPublisher(stack.host, PROJECT)
    for publish in (grpc.publish, ams.publish):
        with pytest.raises(Failed) as raised:
            publish("no-such-topic", batch("x", 0, 1))
        assert raised.value.status == 404 and raised.value.outcome == ERROR, raised.value.kind
    grpc.close()


def test_an_unreachable_grpc_api_is_an_unknown_outcome() -> None:
    from tests.stack import free_port

    grpc = GrpcPublisher(f"127.0.0.1:{free_port()}", PROJECT, timeout=5)
    with pytest.raises(Failed) as raised:
        grpc.publish("any-topic", batch("x", 0, 1))
    assert raised.value.status in (503, 504) and raised.value.outcome == UNKNOWN, raised.value.kind




def publish_until_acknowledged(grpc: GrpcPublisher, topic: str, messages: list[dict[str, Any]], sink: RecordingSink,
                               timeout: float = 90) -> None:
    """As the fault run's publishers: again after an unknown outcome, until acknowledged."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            grpc.publish(topic, messages)
            return
        except Failed as exc:
            assert exc.outcome == UNKNOWN and time.monotonic() < deadline, exc.kind
            sink.error(f"publish: {exc.kind}")
            time.sleep(0.2)


@pytest.fixture
def faulty(tmp_path: Any) -> Iterator[Any]:
    """Emulator, API and pumps as processes of their own (bench/chaos/procs.py), the API to be killed or paused."""
    from bench.chaos.procs import LocalStack

    local = LocalStack(tmp_path / "stack")
    local.start()
    rest = Client(local.url, PROJECT)

    def answers() -> bool:
        try:
            rest.call("GET", "topics")
            return True
        except Failed:
            return False

    assert read_until(answers, bool, timeout=30), (tmp_path / "stack" / "api.log").read_text()[-2000:]
    yield local
    local.stop()


def test_the_grpc_edges_outlive_a_killed_and_a_paused_api(faulty: Any) -> None:
    """The API SIGKILLed and started again on its port, then SIGSTOPped for 12 s, while batches are published
    over gRPC: every key is delivered and its acknowledge answered on both streams (the outcome may be unknown
    where the answer was lost, or a refusal).
    (The fault run's API process serves no AMS port yet, so the AMS edge is not part of this.)"""
    host, sink = f"127.0.0.1:{faulty.api_port}", RecordingSink()
    rest = Client(faulty.url, PROJECT)
    rest.call("PUT", "topics/faults", {})
    subs = {"stream-f": False, "stream-eo-f": True}
    for name, exactly_once in subs.items():
        rest.call("PUT", f"subscriptions/{name}", {"topic": f"projects/{PROJECT}/topics/faults",
                                                  "enableExactlyOnceDelivery": exactly_once})
    streams = [StreamingSubscriber(host, PROJECT, name, sink, exactly_once) for name, exactly_once in subs.items()]
    for stream in streams:
        stream.start()
    grpc, keys, stop = GrpcPublisher(host, PROJECT, timeout=20), set(), threading.Event()

    def publish(batches: int) -> None:
        for _ in range(batches):
            messages = batch(f"f{len(keys)}-", 0, 5)
            publish_until_acknowledged(grpc, "faults", messages, sink)
            keys.update(m["attributes"]["k"] for m in messages)

    def settled() -> dict[str, set[str]]:
        """Keys whose acknowledge got an answer or was sent: acknowledged, unknown or refused. Whether a refused
        key comes back (it must) is the fault run's checker's to judge, not the edge's."""
        return {name: sink.acked_keys(name, OK) | sink.acked_keys(name, UNKNOWN) | sink.refused_keys(name)
                for name in subs}

    try:
        publish(4)
        faulty.restart("api")
        publish(4)
        faulty.procs["api"].wait_ready()
        pause = threading.Thread(target=faulty.pause, args=("api", 12, stop), daemon=True)
        pause.start()
        publish(4)
        pause.join()
        got = read_until(settled, lambda s: all(v >= keys for v in s.values()), timeout=180)
    finally:
        stop.set()
        for stream in streams:
            stream.stop()
        grpc.close()
    missing = {name: keys - acked for name, acked in got.items()}
    assert missing == {name: set() for name in subs}, [sink.story(n, k) for n, k in missing.items() if k]
    assert len(keys) == 60 and sink.acked_keys("stream-eo-f", OK)


class TimedSink(RecordingSink):
    """A RecordingSink that takes the times bench/chaos/puller.py's process reports with."""

    def received(self, sub: str, edge: str, ack_id: str, message: dict[str, Any], attempt: int,
                 t: float | None = None) -> tuple[str, str]:
        assert t is not None and 0 <= t <= self.now()
        return super().received(sub, edge, ack_id, message, attempt)

    def acknowledged(self, sub: str, edge: str, acks: dict[str, tuple[str, str]], t_sent: float, outcome: str,
                     refused: set[str], t: float | None = None) -> None:
        assert t is not None and t_sent <= t <= self.now()
        super().acknowledged(sub, edge, acks, t_sent, outcome, refused)

    def nacked(self, sub: str, edge: str, ack_ids: list[str], t_sent: float, outcome: str,
               t: float | None = None) -> None:
        super().nacked(sub, edge, ack_ids, t_sent, outcome)


def test_the_subscriber_process_acknowledges_before_and_after_a_freeze(
        stack: RunningStack, names: dict[str, str], tmp_path: Path) -> None:
    from bench.chaos.puller import PullerProcess

    sink = TimedSink()
    sub = names["stream-eo"]
    process = PullerProcess(sink, stack.host, PROJECT, sub, True, 0.0, sink.started, tmp_path / "puller.log")
    process.start()
    grpc = GrpcPublisher(stack.host, PROJECT)
    try:
        grpc.publish(names["topic"], batch("g", 0, 10))
        read_until(lambda: sink.acked_keys(sub, OK), lambda acked: len(acked) == 10, timeout=60)
        frozen = threading.Event()
        pause = threading.Thread(target=process.pause, args=(60.0, frozen))
        pause.start()
        assert process.popen is not None
        state = Path(f"/proc/{process.popen.pid}/stat")
        assert read_until(lambda: state.read_text().split()[2], lambda s: s == "T", timeout=10) == "T"
        grpc.publish(names["topic"], batch("g", 10, 10))  # while the subscriber is frozen
        assert len(sink.acked_keys(sub, OK)) == 10
        frozen.set()
        pause.join()
        acked = read_until(lambda: sink.acked_keys(sub, OK), lambda acked: len(acked) == 20, timeout=60)
    finally:
        grpc.close()
        process.stop()
    assert acked == {f"g{i}" for i in range(20)}, sink.story(sub, {f"g{i}" for i in range(20)})
    assert process.starts == 1 and not sink.errors
