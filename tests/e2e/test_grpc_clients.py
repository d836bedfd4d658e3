"""google-cloud-pubsub on its default transport, gRPC, against the stack's REST port, as users point it at
Google's emulator: ``PUBSUB_EMULATOR_HOST=host:port``. Publisher, subscriber with ``subscribe()`` (StreamingPull)
and the schema client work unchanged: batched publish, no loss and one ack each over thousands of messages,
flow control, lease extension, nacks, ordering keys, exactly-once acknowledgements with their per-id errors,
dead-lettering with delivery attempts, filters, seek and snapshots, schemas, push configuration and the IAM
methods."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1 import types as client_types
from google.cloud.pubsub_v1.subscriber import exceptions as sub_exc
from google.pubsub_v1 import SchemaServiceClient

from tests.stack import RunningStack

pytestmark = pytest.mark.e2e
PROJECT = "grpc-e2e"


class Clients:
    def __init__(self, host: str) -> None:
        saved = os.environ.get("PUBSUB_EMULATOR_HOST")
        os.environ["PUBSUB_EMULATOR_HOST"] = host  # read when a client is built: an insecure gRPC channel
        try:
            self.publisher = pubsub_v1.PublisherClient()
            self.batched = pubsub_v1.PublisherClient(batch_settings=client_types.BatchSettings(max_messages=50))
            self.ordered = pubsub_v1.PublisherClient(
                publisher_options=client_types.PublisherOptions(enable_message_ordering=True))
            self.subscriber = pubsub_v1.SubscriberClient()
            self.schemas = SchemaServiceClient(client_options={"api_endpoint": host},
                                               transport=SchemaServiceClient.get_transport_class("grpc")(
                                                   channel=__import__("grpc").insecure_channel(host)))
        finally:
            if saved is None:
                os.environ.pop("PUBSUB_EMULATOR_HOST", None)
            else:
                os.environ["PUBSUB_EMULATOR_HOST"] = saved


@pytest.fixture(scope="module")
def grpc_clients(stack: RunningStack) -> Clients:
    return Clients(stack.host)


@pytest.fixture
def names(unique: str) -> tuple[str, str]:
    return f"projects/{PROJECT}/topics/t-{unique}", f"projects/{PROJECT}/subscriptions/s-{unique}"


class Collector:
    """What a ``subscribe()`` callback saw; ``until(n)`` waits (bounded) until n distinct messages arrived."""

    def __init__(self, on_message: Callable[[Any], None] | None = None) -> None:
        self.seen: Counter[str] = Counter()
        self.messages: list[Any] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.on_message = on_message or (lambda m: m.ack())

    def __call__(self, message: Any) -> None:
        with self.lock:
            self.seen[message.message_id] += 1
            self.messages.append(message)
            self.changed.notify_all()
        self.on_message(message)

    def until(self, count: int, timeout: float = 60) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.seen) >= count, timeout)


@pytest.fixture
def subscribe(grpc_clients: Clients) -> Iterator[Callable[..., Any]]:
    futures = []

    def start(subscription: str, collector: Collector, **kwargs: Any) -> Any:
        future = grpc_clients.subscriber.subscribe(subscription, collector, **kwargs)
        futures.append(future)
        return future

    yield start
    for future in futures:
        future.cancel()


def test_batched_publish_and_subscribe_of_thousands_without_loss(grpc_clients: Clients, names: tuple[str, str],
                                                                 subscribe: Callable[..., Any]) -> None:
    topic, sub = names
    grpc_clients.publisher.create_topic(name=topic)
    grpc_clients.subscriber.create_subscription(name=sub, topic=topic)
    count = 10_000
    seen = Collector()
    subscribe(sub, seen)  # receiving while publishing, as a live consumer does
    futures = [grpc_clients.batched.publish(topic, f"m{i}".encode(), n=str(i)) for i in range(count)]
    ids = {f.result(timeout=120) for f in futures}
    assert len(ids) == count
    assert seen.until(count, timeout=400), f"{len(seen.seen)} of {count}"
    assert set(seen.seen) == ids
    assert grpc_clients.subscriber.pull(subscription=sub, max_messages=10, return_immediately=True).received_messages \
        == [], "every message was acknowledged once"


def test_flow_control_is_never_exceeded(grpc_clients: Clients, names: tuple[str, str],
                                        subscribe: Callable[..., Any]) -> None:
    topic, sub = names
    grpc_clients.publisher.create_topic(name=topic)
    grpc_clients.subscriber.create_subscription(name=sub, topic=topic)
    for i in range(40):
        grpc_clients.publisher.publish(topic, f"f{i}".encode()).result(timeout=30)
    held: set[str] = set()
    most = [0]
    lock = threading.Lock()

    def settle(message: Any) -> None:
        with lock:
            held.discard(message.message_id)
        message.ack()

    def hold(message: Any) -> None:  # each message stays in hand a while: the limit, not the callback, paces
        with lock:
            held.add(message.message_id)
            most[0] = max(most[0], len(held))
        threading.Timer(0.2, settle, args=(message,)).start()

    seen = Collector(hold)
    subscribe(sub, seen, flow_control=client_types.FlowControl(max_messages=5))
    assert seen.until(40, timeout=90)
    assert most[0] <= 5


def test_nack_redelivers_and_ordering_keys_arrive_in_order(grpc_clients: Clients, names: tuple[str, str],
                                                          subscribe: Callable[..., Any]) -> None:
    topic, sub = names
    grpc_clients.publisher.create_topic(name=topic)
    grpc_clients.subscriber.create_subscription(request={"name": sub, "topic": topic,
                                                         "enable_message_ordering": True})
    for i in range(30):
        grpc_clients.ordered.publish(topic, f"{i}".encode(), ordering_key=f"k{i % 3}")
    grpc_clients.ordered.publish(topic, b"last", ordering_key="k0").result(timeout=30)
    nacked = set()

    def first_nack(message: Any) -> None:
        if message.data == b"5" and b"5" not in nacked:
            nacked.add(b"5")
            message.nack()
        else:
            message.ack()

    seen = Collector(first_nack)
    subscribe(sub, seen)
    assert seen.until(31, timeout=90)
    with seen.changed:  # the nacked message comes again
        assert seen.changed.wait_for(lambda: seen.seen.most_common(1)[0][1] >= 2, 60)
    with seen.lock:
        by_key: dict[str, list[bytes]] = {}
        for m in seen.messages:
            by_key.setdefault(m.ordering_key, []).append(m.data)
    for key, datas in by_key.items():
        numbers = [int(d) for d in datas if d != b"last"]
        firsts = list(dict.fromkeys(numbers))
        assert firsts == sorted(firsts), (key, datas)
    assert b"5" in nacked and seen.seen[next(m.message_id for m in seen.messages if m.data == b"5")] >= 2


def test_exactly_once_ack_with_response_and_a_stale_ack_id(grpc_clients: Clients, names: tuple[str, str],
                                                            subscribe: Callable[..., Any]) -> None:
    topic, sub = names
    grpc_clients.publisher.create_topic(name=topic)
    grpc_clients.subscriber.create_subscription(request={"name": sub, "topic": topic,
                                                         "enable_exactly_once_delivery": True})
    grpc_clients.publisher.publish(topic, b"once").result(timeout=30)
    results: list[Any] = []
    settled = threading.Event()

    def ack_twice(message: Any) -> None:
        try:
            results.append(message.ack_with_response().result(timeout=30))
            message.ack_with_response().result(timeout=30)
        except sub_exc.AcknowledgeError as error:  # the second: its ack id was already used
            results.append(error.error_code)
        finally:
            settled.set()

    seen = Collector(ack_twice)
    subscribe(sub, seen)
    assert seen.until(1, timeout=60) and settled.wait(60)
    assert results == [sub_exc.AcknowledgeStatus.SUCCESS, sub_exc.AcknowledgeStatus.INVALID_ACK_ID]
    stale = grpc_clients.subscriber.pull(subscription=sub, max_messages=1, return_immediately=True)
    assert not stale.received_messages
    with pytest.raises(gexc.InvalidArgument) as failed:
        grpc_clients.subscriber.acknowledge(subscription=sub, ack_ids=[seen.messages[0].ack_id])
    assert failed.value.details, "the per-ack-id ErrorInfo travels in grpc-status-details-bin"


def test_dead_letter_with_delivery_attempts(grpc_clients: Clients, names: tuple[str, str],
                                            subscribe: Callable[..., Any]) -> None:
    topic, sub = names
    dead = topic + "-dead"
    grpc_clients.publisher.create_topic(name=topic)
    grpc_clients.publisher.create_topic(name=dead)
    grpc_clients.subscriber.create_subscription(name=sub + "-dead", topic=dead)
    grpc_clients.subscriber.create_subscription(request={
        "name": sub, "topic": topic, "dead_letter_policy": {"dead_letter_topic": dead, "max_delivery_attempts": 5},
        "retry_policy": {"minimum_backoff": "0s", "maximum_backoff": "0s"}})
    grpc_clients.publisher.publish(topic, b"poison").result(timeout=30)
    attempts: list[int] = []

    def nack(message: Any) -> None:
        attempts.append(message.delivery_attempt)
        message.nack()

    subscribe(sub, Collector(nack))
    parked = Collector()
    subscribe(sub + "-dead", parked)
    assert parked.until(1, timeout=120)
    assert attempts[:1] == [1] and max(attempts) == 5


def test_filters_seek_snapshots_and_push_config(grpc_clients: Clients, names: tuple[str, str]) -> None:
    topic, sub = names
    subscriber, publisher = grpc_clients.subscriber, grpc_clients.publisher
    publisher.create_topic(name=topic)
    subscriber.create_subscription(request={"name": sub, "topic": topic, "filter": 'attributes.kind = "keep"'})
    publisher.publish(topic, b"dropped", kind="drop").result(timeout=30)
    kept = publisher.publish(topic, b"kept", kind="keep").result(timeout=30)
    snapshot = sub.replace("/subscriptions/", "/snapshots/")
    subscriber.create_snapshot(name=snapshot, subscription=sub)
    received = _pull(subscriber, sub, 1)
    assert [m.message.message_id for m in received] == [kept]
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in received])
    subscriber.seek(request={"subscription": sub, "snapshot": snapshot})
    assert [m.message.message_id for m in _pull(subscriber, sub, 1)] == [kept]
    assert subscriber.get_snapshot(snapshot=snapshot).topic == topic
    subscriber.modify_push_config(subscription=sub, push_config={"push_endpoint": "http://127.0.0.1:9/push"})
    assert subscriber.get_subscription(subscription=sub).push_config.push_endpoint == "http://127.0.0.1:9/push"
    subscriber.modify_push_config(subscription=sub, push_config={})
    policy = publisher.get_iam_policy(request={"resource": topic})
    assert publisher.set_iam_policy(request={"resource": topic, "policy": policy}).etag
    allowed = publisher.test_iam_permissions(request={"resource": topic, "permissions": ["pubsub.topics.publish"]})
    assert list(allowed.permissions) == ["pubsub.topics.publish"]


def test_schemas_through_the_schema_client(grpc_clients: Clients, unique: str) -> None:
    schemas = grpc_clients.schemas
    parent = f"projects/{PROJECT}"
    avro = '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "string"}]}'
    made = schemas.create_schema(parent=parent, schema={"type_": "AVRO", "definition": avro}, schema_id=f"sc-{unique}")
    assert made.name == f"{parent}/schemas/sc-{unique}"
    schemas.validate_message(request={"parent": parent, "name": made.name, "message": b'{"n": "x"}',
                                      "encoding": "JSON"})
    with pytest.raises(gexc.InvalidArgument):
        schemas.validate_message(request={"parent": parent, "name": made.name, "message": b'{"n": 1}',
                                          "encoding": "JSON"})
    assert [s.name for s in schemas.list_schemas(parent=parent)] == [made.name] or made.name in [
        s.name for s in schemas.list_schemas(parent=parent)]


def test_errors_end_subscribe_at_once(grpc_clients: Clients) -> None:
    future = grpc_clients.subscriber.subscribe(f"projects/{PROJECT}/subscriptions/no-such-sub", lambda m: m.ack())
    with pytest.raises(gexc.NotFound):
        future.result(timeout=60)


def _pull(subscriber: Any, sub: str, count: int) -> list[Any]:
    received: list[Any] = []
    for _ in range(30):
        received += subscriber.pull(subscription=sub, max_messages=10).received_messages
        if len(received) >= count:
            break
    return received
