"""Publishes Google accepts that SQS would refuse as they are, through the local stack with the real
google-cloud-pubsub client (REST): ten messages of 100 wide attributes in one request (1.28 MB), a long
ordering key with spaces and Cyrillic, attributes holding U+FFFF and U+FFFE. Each reaches a pull, an
ordered pull and a push subscription intact, and a normal publish right after is delivered promptly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.pubsub_v1 import PubsubMessage

from tests.e2e.google_helpers import pull_n
from tests.webhooks import Hook, Webhook

WIDE = {f"{j:03d}".ljust(250, "k"): "v" * 1024 for j in range(100)}
LONG_KEY = "ключ упорядочения с пробелами " * 8  # noqa: RUF001 - Cyrillic on purpose: 240 characters, 440 bytes
ODD = {"odd\uffff": "value \uffff\ufffe end", "plain": "x"}
CASES = {"wide": (WIDE, "", 10), "long_key": ({"n": "1"}, LONG_KEY, 3), "odd_chars": (ODD, "k-1", 2)}
PROMPT = 15.0  # seconds a delivery may take on a busy machine (polled, not slept)


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


def subscribe(subscriber: Any, topic: str, name: str, **extra: Any) -> str:
    path = topic.replace("/topics/", "/subscriptions/").rsplit("/", 1)[0] + f"/{name}"
    subscriber.create_subscription(request={"name": path, "topic": topic, "ack_deadline_seconds": 60, **extra})
    return path


def publish(gapic: Any, topic: str, attrs: dict[str, str], key: str, count: int, data: bytes) -> list[str]:
    """One PublishRequest of ``count`` messages (the plain GAPIC client does no batching of its own)."""
    msgs = [PubsubMessage(data=data, attributes=attrs, ordering_key=key) for _ in range(count)]
    return list(gapic.publish(topic=topic, messages=msgs).message_ids)


def check_pulled(subscriber: Any, sub: str, ids: list[str], attrs: dict[str, str], key: str, data: bytes) -> None:
    got = pull_n(subscriber, sub, len(ids), timeout=PROMPT)
    assert sorted(m.message.message_id for m in got) == sorted(ids)
    for m in got:
        assert dict(m.message.attributes) == attrs and m.message.ordering_key == key and m.message.data == data
    if key:
        assert [m.message.message_id for m in got] == ids  # one ordering key: publish order
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got])


def check_pushed(hook: Hook, ids: list[str], attrs: dict[str, str], key: str) -> None:
    pushed = hook.wait_for(len(ids), timeout=PROMPT)
    assert sorted(r.message_id for r in pushed) == sorted(ids)
    for r in pushed:
        message = r.json()["message"]
        assert message.get("attributes", {}) == attrs and message.get("orderingKey", "") == key


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_publish_reaches_pull_ordered_and_push(case: str, publisher: Any, subscriber: Any, gapic: Any,
                                                       topic: str, webhook: Webhook, unique: str) -> None:
    attrs, key, count = CASES[case]
    hook = webhook.hook(204)
    plain = subscribe(subscriber, topic, f"plain-{unique}")
    ordered = subscribe(subscriber, topic, f"ordered-{unique}", enable_message_ordering=True)
    subscribe(subscriber, topic, f"push-{unique}", push_config={"push_endpoint": hook.url})

    ids = publish(gapic, topic, attrs, key, count, b"hostile")
    for sub in (plain, ordered):
        check_pulled(subscriber, sub, ids, attrs, key, b"hostile")
    check_pushed(hook, ids, attrs, key)

    # Nothing was left stalled behind it: an ordinary publish arrives everywhere within seconds.
    after = publish(gapic, topic, {"after": "1"}, "", 1, b"after")
    for sub in (plain, ordered):
        check_pulled(subscriber, sub, after, {"after": "1"}, "", b"after")
    pushed = hook.wait_for(len(ids) + 1, timeout=PROMPT)
    assert after[0] in {r.message_id for r in pushed}
