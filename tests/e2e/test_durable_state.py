"""The local stack's durable state (METRO_DATA_DIR, docs/local-state.md), driven by google-cloud-pubsub: a stack
killed with SIGKILL while publishers are being answered comes back with every answered publish, every resource,
every acknowledgement and every lease (an ack id handed out before the kill still works after it); a torn
last journal record is dropped; a clean stop folds the journal into a snapshot; two stacks never share a
directory."""

from __future__ import annotations

import datetime
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient as GapicPublisher
from google.pubsub_v1 import PubsubMessage

from tests.e2e.google_helpers import pull_n, pull_nothing
from tests.stack import ROOT, RunningStack, free_port, stack_env, start_stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

P = "durable"
TOPIC, SUB, SNAPSHOT = f"projects/{P}/topics/orders", f"projects/{P}/subscriptions/billing", \
    f"projects/{P}/snapshots/before"


class Clients:
    def __init__(self, stack: RunningStack) -> None:
        rest: dict[str, Any] = {"transport": "rest", "credentials": AnonymousCredentials(),
                                "client_options": {"api_endpoint": stack.url}}
        self.gapic = GapicPublisher(**rest)  # one call, one request: what was answered is known exactly
        self.subscriber = pubsub_v1.SubscriberClient(**rest)

    def publish(self, data: bytes) -> str:
        return str(self.gapic.publish(topic=TOPIC, messages=[PubsubMessage(data=data)]).message_ids[0])


def _start(data: Path, log: Path) -> RunningStack:
    return start_stack(log, extra_env={"METRO_DATA_DIR": str(data), "METRO_PULL_WAIT_SECONDS": "1"})


def _kill(stack: RunningStack) -> None:
    stack.process.send_signal(signal.SIGKILL)
    stack.process.wait(timeout=10)


def _drain(subscriber: pubsub_v1.SubscriberClient) -> set[str]:
    """Pull and acknowledge until a pull comes back empty; the ids delivered."""
    delivered: set[str] = set()
    while True:
        resp = subscriber.pull(subscription=SUB, max_messages=100, return_immediately=False)
        if not resp.received_messages:
            return delivered
        delivered.update(m.message.message_id for m in resp.received_messages)
        subscriber.acknowledge(subscription=SUB, ack_ids=[m.ack_id for m in resp.received_messages])


def _publish_until_killed(clients: Clients, stack: RunningStack, before_kill: int) -> set[str]:
    """Four publishers, one message per request; SIGKILL once ``before_kill`` were answered; the answered ids."""
    answered: set[str] = set()
    lock, enough = threading.Lock(), threading.Event()

    def publisher(n: int) -> None:
        for i in range(10_000):
            try:
                message_id = clients.publish(b"p%d-%d" % (n, i))
            except Exception:  # the stack is gone: what was not answered may or may not be kept
                return
            with lock:
                answered.add(message_id)
                if len(answered) >= before_kill:
                    enough.set()

    threads = [threading.Thread(target=publisher, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    assert enough.wait(120), "the publishers were not answered"
    _kill(stack)  # while the publishers are still sending
    for t in threads:
        t.join(30)
    with lock:
        return set(answered)


def test_a_killed_stack_comes_back_with_every_answered_publish_ack_and_lease(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stack = _start(data, tmp_path / "first.log")
    try:
        clients = Clients(stack)
        clients.gapic.create_topic(name=TOPIC)
        clients.subscriber.create_subscription(name=SUB, topic=TOPIC, ack_deadline_seconds=60)
        acked_id, leased_id = clients.publish(b"acked"), clients.publish(b"leased")
        got = {m.message.message_id: m for m in pull_n(clients.subscriber, SUB, 2)}
        clients.subscriber.acknowledge(subscription=SUB, ack_ids=[got[acked_id].ack_id])
        leased_ack_id = got[leased_id].ack_id  # held across the kill: its 60 s deadline has not passed
        clients.subscriber.create_snapshot(name=SNAPSHOT, subscription=SUB)
        answered = _publish_until_killed(clients, stack, before_kill=150)
    finally:
        stack.stop()
    assert "dropped a torn" not in (tmp_path / "first.log").read_text()

    again = _start(data, tmp_path / "second.log")
    try:
        clients = Clients(again)
        assert [t.name for t in clients.gapic.list_topics(project=f"projects/{P}")] == [TOPIC]
        assert clients.subscriber.get_subscription(subscription=SUB).ack_deadline_seconds == 60
        assert [s.name for s in clients.subscriber.list_snapshots(project=f"projects/{P}")] == [SNAPSHOT]
        # the lease survived, under the same ack id: a nack with it makes the message deliverable at once
        clients.subscriber.modify_ack_deadline(subscription=SUB, ack_ids=[leased_ack_id], ack_deadline_seconds=0)
        delivered = _drain(clients.subscriber)  # every answered publish, never the acknowledged or the leased one
        assert answered <= delivered, f"{len(answered - delivered)} answered publishes lost"
        assert acked_id not in delivered and leased_id in delivered
        assert len(delivered - answered) <= 5  # the nacked one and the requests in flight at the kill
    finally:
        again.stop()
    log = (tmp_path / "second.log").read_text()
    assert "no snapshot" in log and "calls replayed" in log


def test_a_clean_stop_snapshots_and_a_torn_record_is_dropped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stack = _start(data, tmp_path / "first.log")
    try:
        clients = Clients(stack)
        clients.gapic.create_topic(name=TOPIC)
        clients.subscriber.create_subscription(request={"name": SUB, "topic": TOPIC, "retain_acked_messages": True})
        started = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
        first = clients.publish(b"before the stop")
    finally:
        stack.stop()  # SIGTERM: the journal is folded into a snapshot
    assert (data / "snapshot.pickle").exists() and (data / "journal-1.log").stat().st_size < 100

    stack = _start(data, tmp_path / "second.log")
    try:
        assert "snapshot 1, 0 calls replayed" in (tmp_path / "second.log").read_text()
        second = Clients(stack).publish(b"after the snapshot")
        _kill(stack)
    finally:
        stack.stop()
    journal = data / "journal-1.log"
    whole = journal.read_bytes()
    journal.write_bytes(whole + whole[-40:-5])  # a crash in the middle of the next record's write

    stack = _start(data, tmp_path / "third.log")
    try:
        log = (tmp_path / "third.log").read_text()
        assert "snapshot 1," in log and "dropped a torn last record of 35 bytes" in log
        subscriber = Clients(stack).subscriber
        got = pull_n(subscriber, SUB, 2)
        assert sorted(m.message.message_id for m in got) == sorted([first, second])
        assert {m.message.data for m in got} == {b"before the stop", b"after the snapshot"}
        subscriber.acknowledge(subscription=SUB, ack_ids=[m.ack_id for m in got])
        pull_nothing(subscriber, SUB)
        # the message log and its bodies in S3 came back too: seeking back delivers both again
        subscriber.seek(request={"subscription": SUB, "time": started})
        again = pull_n(subscriber, SUB, 2)
        assert sorted(m.message.message_id for m in again) == sorted([first, second])
    finally:
        stack.stop()


def test_two_stacks_never_share_a_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stack = _start(data, tmp_path / "first.log")
    try:
        env = stack_env(free_port(), free_port(), {"METRO_DATA_DIR": str(data), "METRO_AMS_PORT": str(free_port())})
        second = subprocess.run([sys.executable, "-m", "chalicelib.local"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120, check=False)
        assert second.returncode == 1
        assert f"{data.resolve()} is in use by another Metro stack" in second.stderr
    finally:
        stack.stop()


def test_folds_while_serving_lose_nothing(tmp_path: Path) -> None:
    """A journal folded into a snapshot every ~64 KiB while publishers are answered, then SIGKILL: the last
    snapshot and the journal after it hold every answered publish."""
    data = tmp_path / "data"
    stack = start_stack(tmp_path / "first.log", extra_env={"METRO_DATA_DIR": str(data), "METRO_PULL_WAIT_SECONDS": "1",
                                                           "METRO_DATA_SNAPSHOT_BYTES": "65536"})
    try:
        clients = Clients(stack)
        clients.gapic.create_topic(name=TOPIC)
        clients.subscriber.create_subscription(name=SUB, topic=TOPIC)
        answered = _publish_until_killed(clients, stack, before_kill=120)
    finally:
        stack.stop()
    folds = (tmp_path / "first.log").read_text().count("state snapshot:")
    assert folds >= 3, f"only {folds} folds: the test did not exercise them"

    again = _start(data, tmp_path / "second.log")
    try:
        delivered = _drain(Clients(again).subscriber)
        assert answered <= delivered, f"{len(answered - delivered)} answered publishes lost"
    finally:
        again.stop()
    # the restart continues from the newest snapshot: the one last logged, or one more when the kill landed
    # between a snapshot's durable write and its log line
    restored = (tmp_path / "second.log").read_text()
    assert f"snapshot {folds}," in restored or f"snapshot {folds + 1}," in restored, restored
