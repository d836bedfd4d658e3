"""Publish enqueues its messages itself; the stream's fan-out only delivers what publish could not."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from chalicelib.api.parsing import publish_request, subscription_request
from chalicelib.core.errors import NotFound
from chalicelib.core.records import LogEntry
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PullRequest
from chalicelib.delivery.fanout import FanOut
from chalicelib.runtime import Services
from chalicelib.store.log import entry_from_item
from chalicelib.store.queues import SendResult
from tests.functional.conftest import FakeClock, stream_event
from tests.functional.test_message_path import pull, sub, topic


@pytest.fixture
def direct(services: Services, clock: FakeClock) -> Services:
    ctx = services.ctx
    ctx = dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, direct_fanout=True))
    built = Services.build(ctx)
    built.admin.create_topic(topic(), Topic())
    built.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    built.admin.create_subscription(sub("sub-f"), subscription_request(
        {"topic": topic().path, "filter": 'attributes.k = "v"'}, sub("sub-f")))
    clock.advance(1)
    return built


def publish(services: Services, n: int, attrs: dict[str, str] | None = None) -> list[str]:
    msgs = [{"data": "eA==", **({"attributes": attrs} if attrs else {})} for _ in range(n)]
    return list(services.publish.publish(topic(), publish_request({"messages": msgs})).message_ids)


def stream_entries(services: Services) -> list[LogEntry]:
    return [entry_from_item(r["dynamodb"]["NewImage"]) for r in stream_event(services)["Records"]]


def test_publish_enqueues_for_every_subscription_and_marks_the_log_item(direct: Services) -> None:
    ids = publish(direct, 25, {"k": "v"})
    (entry,) = stream_entries(direct)
    assert entry.fanned and entry.count == 25
    got = pull(direct, 100)
    assert sorted(m["message"]["messageId"] for m in got) == sorted(ids)
    filtered = direct.pull.pull(sub("sub-f"), PullRequest(100, True)).to_wire()["receivedMessages"]
    assert len(filtered) == 25
    # The stream handler skips the marked item: no second copy.
    assert FanOut(direct.ctx).handle(stream_event(direct)) == {"batchItemFailures": []}
    assert pull(direct, 100) == []


def test_a_failed_enqueue_leaves_the_request_to_the_stream(direct: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    real = direct.ctx.queues.send_all

    def flaky(jobs: Any) -> list[SendResult]:
        out = real(jobs[:1])  # the first subscription gets the messages, the second's sends fail
        return out + [SendResult(failed=list(range(len(msgs)))) for _, msgs in jobs[1:]]

    monkeypatch.setattr(direct.ctx.queues, "send_all", flaky)
    ids = publish(direct, 3, {"k": "v"})
    monkeypatch.undo()
    (entry,) = stream_entries(direct)
    assert not entry.fanned
    assert FanOut(direct.ctx).handle(stream_event(direct)) == {"batchItemFailures": []}
    # Both subscriptions have every message; the one served during publish has them twice (at-least-once).
    firsts = [m["message"]["messageId"] for m in pull(direct, 100)]
    seconds = [m["message"]["messageId"]
               for m in direct.pull.pull(sub("sub-f"), PullRequest(100, True))
               .to_wire()["receivedMessages"]]
    assert set(firsts) == set(seconds) == set(ids)
    assert len(firsts) + len(seconds) == 9


def test_a_failed_object_write_fails_the_publish_and_logs_nothing(direct: Services,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from chalicelib.core.errors import Unavailable

    def down(*_: Any) -> None:
        raise Unavailable("S3 is down")

    monkeypatch.setattr(direct.ctx.log, "put_object", down)
    with pytest.raises(Unavailable):
        publish(direct, 2)
    assert stream_entries(direct) == []


def test_cached_records_follow_this_process_writes(direct: Services) -> None:
    assert direct.pull.pull(sub(), PullRequest(1, True)).to_wire() == {}
    direct.admin.delete_subscription(sub())
    with pytest.raises(NotFound):
        direct.pull.pull(sub(), PullRequest(1, True))
    direct.admin.delete_topic(topic())
    with pytest.raises(NotFound):
        publish(direct, 1)


def test_a_wide_topic_is_left_to_the_stream(direct: Services) -> None:
    ctx = direct.ctx
    narrow = dataclasses.replace(ctx, config=dataclasses.replace(ctx.config,
                                                                     direct_fanout_max_subscriptions=1))
    ids = publish(Services.build(narrow), 2, {"k": "v"})  # the topic has two subscriptions
    (entry,) = stream_entries(direct)
    assert not entry.fanned
    assert pull(direct, 10) == []
    assert FanOut(direct.ctx).handle(stream_event(direct)) == {"batchItemFailures": []}
    assert sorted(m["message"]["messageId"] for m in pull(direct, 10)) == sorted(ids)


def test_a_failed_enqueue_for_an_ordered_subscription_fails_a_keyed_publish(
        direct: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Left to the stream, the keyed messages would reach the ordered queue after the key's next publish (the
    fault run saw it): the publish fails instead, logs nothing, and the client's retry keeps the order."""
    from chalicelib.core.errors import Unavailable

    direct.admin.create_subscription(sub("sub-o"), subscription_request(
        {"topic": topic().path, "enableMessageOrdering": True}, sub("sub-o")))
    ordered_url = direct.ctx.resources.get_subscription(sub("sub-o")).queue_url  # type: ignore[union-attr]
    real = direct.ctx.queues.send_all

    def ordered_down(jobs: Any) -> list[SendResult]:
        return [SendResult(failed=list(range(len(msgs)))) if url == ordered_url else real([(url, msgs)])[0]
                for url, msgs in jobs]

    monkeypatch.setattr(direct.ctx.queues, "send_all", ordered_down)
    keyed = [{"data": "eA==", "orderingKey": "k1"}, {"data": "eQ==", "orderingKey": "k1"}]
    with pytest.raises(Unavailable):
        direct.publish.publish(topic(), publish_request({"messages": keyed}))
    assert stream_entries(direct) == []  # nothing the stream could enqueue later
    ids = publish(direct, 2)  # no ordering key: the stream may fan it out later, as before
    (entry,) = stream_entries(direct)
    assert not entry.fanned and entry.count == len(ids)
    monkeypatch.undo()
    retried = direct.publish.publish(topic(), publish_request({"messages": keyed})).message_ids
    got = direct.pull.pull(sub("sub-o"), PullRequest(10, True)).to_wire()["receivedMessages"]
    assert [m["message"]["messageId"] for m in got] == list(retried)
