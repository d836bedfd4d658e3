"""gRPC scenarios for google-cloud-pubsub on its default transport, driven the same way against any server that
``PUBSUB_EMULATOR_HOST`` can name (Google's emulator, Metro): each returns an *observation*, a small JSON value of
what a user of the client would see (counts, orders, statuses, exception classes), never ids or times, so that two
servers that behave alike observe the same. tests/compat/test_grpc_compat.py compares them.

Every wait is bounded: a scenario that does not see what it waits for says so in its observation
(``"timed out"``) instead of hanging.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.cloud.pubsub_v1 import types as client_types
from google.cloud.pubsub_v1.subscriber import exceptions as sub_exc

PROJECT = "compat-project"
WAIT = 60.0  # seconds any one wait may take
_ids = itertools.count()

Observation = dict[str, Any]


class Clients:
    """google-cloud-pubsub's clients on gRPC, pointed at ``host`` as at Google's emulator."""

    def __init__(self, host: str) -> None:
        self.host = host
        saved = os.environ.get("PUBSUB_EMULATOR_HOST")
        os.environ["PUBSUB_EMULATOR_HOST"] = host  # read when a client is built: an insecure gRPC channel
        try:
            self.publisher = pubsub_v1.PublisherClient()
            self.ordered = pubsub_v1.PublisherClient(
                publisher_options=client_types.PublisherOptions(enable_message_ordering=True))
            self.subscriber = pubsub_v1.SubscriberClient()
        finally:
            if saved is None:
                os.environ.pop("PUBSUB_EMULATOR_HOST", None)
            else:
                os.environ["PUBSUB_EMULATOR_HOST"] = saved

    def names(self, label: str) -> tuple[str, str]:
        suffix = f"{label}-{next(_ids)}-{int(time.time() * 1000) % 1_000_000}"
        return f"projects/{PROJECT}/topics/t-{suffix}", f"projects/{PROJECT}/subscriptions/s-{suffix}"

    def close(self) -> None:
        for publisher in (self.publisher, self.ordered):
            publisher.stop()


class Seen:
    """What a ``subscribe()`` callback saw; ``wait(predicate)`` waits, bounded, until it holds."""

    def __init__(self, on_message: Callable[[Seen, Any], None]) -> None:
        self.messages: list[Any] = []
        self.count: Counter[str] = Counter()
        self.notes: list[Any] = []
        self.changed = threading.Condition()
        self.on_message = on_message

    def __call__(self, message: Any) -> None:
        with self.changed:
            self.messages.append(message)
            self.count[message.message_id] += 1
        self.on_message(self, message)
        with self.changed:
            self.changed.notify_all()

    def note(self, value: Any) -> None:
        with self.changed:
            self.notes.append(value)
            self.changed.notify_all()

    def wait(self, predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout)


def _ack(_: Seen, message: Any) -> None:
    message.ack()


@contextmanager
def subscribed(clients: Clients, subscription: str, seen: Seen) -> Iterator[Any]:
    future = clients.subscriber.subscribe(subscription, seen)
    try:
        yield future
    finally:
        future.cancel()
        with suppress(Exception):  # a cancelled stream ends with CancelledError or its last error: not observed
            future.result(timeout=WAIT)


def _publish_all(publisher: Any, topic: str, messages: list[tuple[bytes, dict[str, str], str]]) -> list[str]:
    futures = [publisher.publish(topic, data, ordering_key=key, **attributes) for data, attributes, key in messages]
    return [f.result(timeout=WAIT) for f in futures]


# -- the scenarios ----------------------------------------------------------------------------------------------


def round_trip(clients: Clients) -> Observation:
    """Publish 20 messages with attributes; ``subscribe()`` receives each once, as sent; all acknowledged."""
    topic, sub = clients.names("trip")
    clients.publisher.create_topic(name=topic)
    clients.subscriber.create_subscription(name=sub, topic=topic)
    sent = {f"m{i}".encode(): {"n": str(i), "kind": "trip"} for i in range(20)}
    ids = _publish_all(clients.publisher, topic, [(data, attrs, "") for data, attrs in sent.items()])
    seen = Seen(_ack)
    with subscribed(clients, sub, seen):
        complete = seen.wait(lambda: len(seen.count) >= len(sent))
    return {"complete": complete, "distinct_ids_published": len(set(ids)),
            "received_as_published": {m.message_id for m in seen.messages} == set(ids)
            and all(dict(m.attributes) == sent.get(m.data) for m in seen.messages),
            "publish_time_set": all(m.publish_time.timestamp() > 0 for m in seen.messages),
            "delivery_attempt": sorted({str(m.delivery_attempt) for m in seen.messages})}


def nack_redelivery(clients: Clients) -> Observation:
    """A message nacked on its first delivery comes again on the same stream; acknowledged then, it stops."""
    topic, sub = clients.names("nack")
    clients.publisher.create_topic(name=topic)
    clients.subscriber.create_subscription(name=sub, topic=topic)
    _publish_all(clients.publisher, topic, [(b"nack me", {}, "")])

    def nack_first(seen: Seen, message: Any) -> None:
        if seen.count[message.message_id] == 1:
            message.nack()
        else:
            message.ack()
            seen.note("acked")

    seen = Seen(nack_first)
    with subscribed(clients, sub, seen):
        redelivered = seen.wait(lambda: "acked" in seen.notes)
    return {"redelivered": redelivered, "deliveries": len(seen.messages),
            "same_data": len({m.data for m in seen.messages}) == 1}


def ordering_keys(clients: Clients) -> Observation:
    """30 messages on 3 ordering keys, published in order: each key's messages arrive in publish order."""
    topic, sub = clients.names("order")
    clients.publisher.create_topic(name=topic)
    clients.subscriber.create_subscription(request={"name": sub, "topic": topic, "enable_message_ordering": True})
    messages: list[tuple[bytes, dict[str, str], str]] = [(str(i).encode(), {}, f"k{i % 3}") for i in range(30)]
    _publish_all(clients.ordered, topic, messages)
    seen = Seen(_ack)
    with subscribed(clients, sub, seen):
        complete = seen.wait(lambda: len(seen.count) >= len(messages))
    by_key: dict[str, list[int]] = {}
    for m in seen.messages:
        by_key.setdefault(m.ordering_key, []).append(int(m.data))
    firsts = {key: list(dict.fromkeys(values)) for key, values in by_key.items()}
    return {"complete": complete, "keys": sorted(by_key),
            "in_order_per_key": all(values == sorted(values) for values in firsts.values())}


def exactly_once(clients: Clients) -> Observation:
    """On an exactly-once subscription: ``ack_with_response`` succeeds, a second one with the same (now stale) ack
    id fails, and so does a unary Acknowledge with it after the stream closed."""
    topic, sub = clients.names("once")
    clients.publisher.create_topic(name=topic)
    clients.subscriber.create_subscription(request={"name": sub, "topic": topic,
                                                    "enable_exactly_once_delivery": True})
    _publish_all(clients.publisher, topic, [(b"once", {}, "")])

    def ack_twice(seen: Seen, message: Any) -> None:
        outcome: list[str] = []
        for _ in range(2):
            try:
                outcome.append(message.ack_with_response().result(timeout=WAIT).name)
            except sub_exc.AcknowledgeError as error:
                outcome.append(error.error_code.name)
            except Exception as error:  # anything else is observed by its class
                outcome.append(type(error).__name__)
        seen.note(outcome)

    seen = Seen(ack_twice)
    with subscribed(clients, sub, seen):
        acked = seen.wait(lambda: bool(seen.notes))
    observation: Observation = {"acked": acked, "ack_with_response": seen.notes[0] if seen.notes else None,
                                "deliveries": len(seen.messages)}
    if seen.messages:
        try:
            clients.subscriber.acknowledge(subscription=sub, ack_ids=[seen.messages[0].ack_id], timeout=WAIT)
            observation["unary_stale_ack"] = "OK"
        except gexc.GoogleAPICallError as error:
            observation["unary_stale_ack"] = type(error).__name__
    return observation


def dead_letter(clients: Clients) -> Observation:
    """A message nacked on every delivery, with a dead-letter policy of 5 attempts: the deliveries carry
    ``delivery_attempt`` 1 to 5, then the message arrives on the dead-letter topic's subscription."""
    topic, sub = clients.names("dlq")
    dead_topic, dead_sub = clients.names("dlq-dead")
    for name in (topic, dead_topic):
        clients.publisher.create_topic(name=name)
    clients.subscriber.create_subscription(name=dead_sub, topic=dead_topic)
    clients.subscriber.create_subscription(request={
        "name": sub, "topic": topic,
        "dead_letter_policy": {"dead_letter_topic": dead_topic, "max_delivery_attempts": 5},
        "retry_policy": {"minimum_backoff": "0s", "maximum_backoff": "0s"}})
    _publish_all(clients.publisher, topic, [(b"poison", {}, "")])

    def nack(_: Seen, message: Any) -> None:
        message.nack()

    attempts = Seen(nack)
    parked = Seen(_ack)
    with subscribed(clients, sub, attempts), subscribed(clients, dead_sub, parked):
        arrived = parked.wait(lambda: bool(parked.messages), timeout=2 * WAIT)
    return {"dead_lettered": arrived, "data": parked.messages[0].data.decode() if parked.messages else None,
            "delivery_attempts": sorted({m.delivery_attempt for m in attempts.messages if m.delivery_attempt})}


def _ending(clients: Clients, subscription: str) -> Observation:
    started = time.monotonic()
    future = clients.subscriber.subscribe(subscription, lambda m: m.ack())
    try:
        future.result(timeout=WAIT)
        ended = "ended without an error"
    except TimeoutError:
        future.cancel()
        ended = "timed out"
    except gexc.GoogleAPICallError as error:
        ended = type(error).__name__
    return {"ends_with": ended, "within_10s": time.monotonic() - started < 10}


def subscribe_missing(clients: Clients) -> Observation:
    """``subscribe()`` to a subscription that does not exist ends at once with NOT_FOUND."""
    return _ending(clients, f"projects/{PROJECT}/subscriptions/missing-{next(_ids)}")


def subscribe_invalid_name(clients: Clients) -> Observation:
    """``subscribe()`` to a malformed subscription name ends at once with INVALID_ARGUMENT."""
    return _ending(clients, f"projects/{PROJECT}/subscriptions/bad name {next(_ids)}!")


def unary_errors(clients: Clients) -> Observation:
    """What unary calls answer to requests Google refuses or that name what is missing: the exception class of
    each (``OK`` when it succeeds)."""
    topic, sub = clients.names("unary")
    missing_topic, missing_sub = clients.names("missing")
    clients.publisher.create_topic(name=topic)
    calls: dict[str, Callable[[], Any]] = {
        "create duplicate topic": lambda: clients.publisher.create_topic(name=topic),
        "get missing topic": lambda: clients.publisher.get_topic(topic=missing_topic),
        "get missing subscription": lambda: clients.subscriber.get_subscription(subscription=missing_sub),
        "subscription of missing topic": lambda: clients.subscriber.create_subscription(
            name=missing_sub, topic=missing_topic),
        "subscription with a 5 s ack deadline": lambda: clients.subscriber.create_subscription(
            name=sub, topic=topic, ack_deadline_seconds=5),
        "publish to missing topic": lambda: clients.publisher.publish(missing_topic, b"x").result(timeout=WAIT),
        "publish a goog attribute": lambda: clients.publisher.publish(topic, b"x", googthing="y").result(
            timeout=WAIT),
        "pull from missing subscription": lambda: clients.subscriber.pull(subscription=missing_sub, max_messages=1,
                                                                          timeout=WAIT),
    }
    out: Observation = {}
    for name, call in calls.items():
        try:
            call()
            out[name] = "OK"
        except gexc.GoogleAPICallError as error:
            out[name] = type(error).__name__
    return out


SCENARIOS: dict[str, Callable[[Clients], Observation]] = {
    "publish and subscribe() round trip": round_trip,
    "nack redelivery": nack_redelivery,
    "ordering keys": ordering_keys,
    "exactly-once ack_with_response and a stale ack id": exactly_once,
    "dead-letter delivery_attempt": dead_letter,
    "subscribe() to a missing subscription": subscribe_missing,
    "subscribe() to an invalid subscription name": subscribe_invalid_name,
    "unary errors": unary_errors,
}


def observe(clients: Clients, scenario: str) -> Observation:
    """One scenario's observation; an error that escapes it is observed by its class."""
    try:
        return SCENARIOS[scenario](clients)
    except gexc.GoogleAPICallError as error:
        return {"error": type(error).__name__}
