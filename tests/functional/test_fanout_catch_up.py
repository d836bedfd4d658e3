"""The maintenance run's fan-out catch-up: what the stream never fanned out (fan-out down for longer than the stream
keeps its records) reaches the subscriptions anyway, once, on an injected clock."""

from __future__ import annotations

import dataclasses

import pytest

from chalicelib.api.parsing import publish_request, subscription_request
from chalicelib.core.wire.models import Topic
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.maintenance import catch_up_fanout
from chalicelib.runtime import Services
from chalicelib.store.log import UNFANNED_INDEX
from tests.functional.conftest import FakeClock, stream_event
from tests.functional.test_message_path import pull, sub, topic

STREAM_RETENTION = 24 * 3600


@pytest.fixture
def stream_only(services: Services, clock: FakeClock) -> Services:
    """Publish leaves every request to the stream (as for a topic wider than direct fan-out serves)."""
    ctx = services.ctx
    ctx = dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, direct_fanout=False,
                                                              fanout_catchup_seconds=900))
    built = Services.build(ctx)
    built.admin.create_topic(topic(), Topic())
    built.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    clock.advance(1)
    return built


def publish(services: Services, n: int) -> list[str]:
    return list(services.publish.publish(topic(), publish_request({"messages": [{"data": "eA=="}] * n})).message_ids)


def unfanned_count(services: Services) -> int:
    ctx = services.ctx
    page = ctx.log._ddb.scan(TableName=ctx.config.messages_table, IndexName=UNFANNED_INDEX)
    return int(page["Count"])


def test_an_outage_longer_than_the_stream_keeps_records_loses_nothing(stream_only: Services, clock: FakeClock) -> None:
    ids = publish(stream_only, 3) + publish(stream_only, 2)
    assert unfanned_count(stream_only) == 2
    clock.advance(60)
    assert catch_up_fanout(stream_only.ctx) == 0  # too young: the stream handler may still be on it
    assert pull(stream_only, 100) == []
    clock.advance(STREAM_RETENTION + 3600)  # fan-out was down all along: the stream's records are gone
    assert catch_up_fanout(stream_only.ctx) == 2
    assert sorted(m["message"]["messageId"] for m in pull(stream_only, 100)) == sorted(ids)
    assert unfanned_count(stream_only) == 0
    assert catch_up_fanout(stream_only.ctx) == 0  # idempotent: nothing fanned out twice
    assert pull(stream_only, 100) == []


def test_the_stream_handler_takes_its_records_off_the_catch_up(stream_only: Services, clock: FakeClock) -> None:
    ids = publish(stream_only, 4)
    assert FanOut(stream_only.ctx).handle(stream_event(stream_only)) == {"batchItemFailures": []}
    assert sorted(m["message"]["messageId"] for m in pull(stream_only, 100)) == sorted(ids)
    assert unfanned_count(stream_only) == 0
    clock.advance(STREAM_RETENTION)
    assert catch_up_fanout(stream_only.ctx) == 0
    assert pull(stream_only, 100) == []


def test_directly_fanned_requests_never_enter_the_index(services: Services, clock: FakeClock) -> None:
    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    ctx = dataclasses.replace(services.ctx, config=dataclasses.replace(services.ctx.config, direct_fanout=True))
    built = Services.build(ctx)
    publish(built, 2)
    assert unfanned_count(built) == 0


def test_a_failing_catch_up_leaves_the_request_for_the_next_run(stream_only: Services, clock: FakeClock,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from chalicelib.core.errors import Unavailable

    ids = publish(stream_only, 2)
    clock.advance(STREAM_RETENTION)

    def down(*_: object) -> int:
        raise Unavailable("SQS is down")

    monkeypatch.setattr(FanOut, "deliver", down)
    assert catch_up_fanout(stream_only.ctx) == 0
    monkeypatch.undo()
    assert unfanned_count(stream_only) == 1
    assert catch_up_fanout(stream_only.ctx) == 1
    assert sorted(m["message"]["messageId"] for m in pull(stream_only, 100)) == sorted(ids)


def _matches(pattern: object, value: object) -> bool:
    """Lambda event filtering, for what the fan-out pattern uses: nested keys, value lists, ``exists``."""
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return False
        return all(_matches(p, value.get(k, _ABSENT)) for k, p in pattern.items())
    assert isinstance(pattern, list)
    for option in pattern:
        if isinstance(option, dict) and "exists" in option:
            if option["exists"] == (value is not _ABSENT):
                return True
        elif option == value:
            return True
    return False


_ABSENT = object()


def test_the_mappings_filter_passes_exactly_the_records_the_handler_works_on(services: Services,
                                                                            clock: FakeClock) -> None:
    import json

    from infra.template import FANOUT_RECORDS

    services.admin.create_topic(topic(), Topic())
    services.admin.create_subscription(sub(), subscription_request({"topic": topic().path}, sub()))
    for direct in (True, False):
        ctx = dataclasses.replace(services.ctx, config=dataclasses.replace(services.ctx.config, direct_fanout=direct))
        publish(Services.build(ctx), 1)
    records = stream_event(services)["Records"]
    pattern = json.loads(json.dumps(FANOUT_RECORDS))
    passed = [r for r in records if _matches(pattern, r)]
    assert len(records) == 2 and len(passed) == 1
    assert "fo" not in passed[0]["dynamodb"]["NewImage"]  # the request publish left to the stream
    FanOut(services.ctx).handle({"Records": passed})
    (marked,) = stream_event(services)["Records"][2:]
    assert marked["eventName"] == "MODIFY" and not _matches(pattern, marked)  # the handler's own mark never returns


def test_a_run_invoked_by_hand_catches_up_at_once(stream_only: Services, clock: FakeClock) -> None:
    from chalicelib.delivery.maintenance import catch_up_after

    ids = publish(stream_only, 2)
    clock.advance(5)
    assert catch_up_after({"time": "2026-11-26T16:00:00Z"}, stream_only.ctx) == 900  # the scheduled run
    for junk in (-1, "0", True, None):
        assert catch_up_after({"detail": {"catchUpAfterSeconds": junk}}, stream_only.ctx) == 900
    assert catch_up_after({"detail": "x"}, stream_only.ctx) == 900
    assert catch_up_fanout(stream_only.ctx, {"detail": {"catchUpAfterSeconds": 0}}) == 1
    assert sorted(m["message"]["messageId"] for m in pull(stream_only, 100)) == sorted(ids)
