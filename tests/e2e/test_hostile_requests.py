"""Hostile request bodies over HTTP: each is a Google error (400), never a 500 or a stalled request."""

from __future__ import annotations

import base64
import json

import pytest

from tests.e2e.test_raw_http import PROJECT, Api, api  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.e2e


def _topic_and_sub(api: Api, unique: str) -> tuple[str, str]:  # noqa: F811
    topic, sub = f"/v1/projects/{PROJECT}/topics/hostile-{unique}", f"/v1/projects/{PROJECT}/subscriptions/hs-{unique}"
    api.call("PUT", topic, {})
    api.call("PUT", sub, {"topic": topic[4:]})
    return topic, sub


@pytest.mark.parametrize("raw", [
    '{"messages": [{"data": "eA==", "attributes": {"\\ud800": "v"}}]}',
    '{"messages": [{"data": "eA==", "attributes": {"k": "\\udfff"}}]}',
    '{"messages": [{"data": "eA==", "orderingKey": "a\\ud800b"}]}',
    '{"messages": ' + "[" * 50_000 + "]" * 50_000 + "}",
], ids=["surrogate-key", "surrogate-value", "surrogate-ordering-key", "deep-nesting"])
def test_publish_of_hostile_json_is_invalid_argument(api: Api, unique: str, raw: str) -> None:  # noqa: F811
    topic, _ = _topic_and_sub(api, unique)
    code, status, _ = api.error("POST", topic + ":publish", raw=raw)
    assert (code, status) == (400, "INVALID_ARGUMENT")


def test_a_filter_with_a_lone_surrogate_is_invalid_argument(api: Api, unique: str) -> None:  # noqa: F811
    topic, _ = _topic_and_sub(api, unique)
    raw = json.dumps({"topic": topic[4:], "filter": "attributes.k = \"\\ud800\""}).replace("\\\\ud800", "\\ud800")
    code, status, _ = api.error("PUT", f"/v1/projects/{PROJECT}/subscriptions/hf-{unique}", raw=raw)
    assert (code, status) == (400, "INVALID_ARGUMENT")


def test_ten_thousand_ack_ids_are_refused_at_once(api: Api, unique: str) -> None:  # noqa: F811
    _, sub = _topic_and_sub(api, unique)
    ids = ["A" * 600] * 10_000  # about 6 MB of ids: far past Google's 512 KiB request limit
    for verb, extra in (("acknowledge", {}), ("modifyAckDeadline", {"ackDeadlineSeconds": 10})):
        code, status, message = api.error("POST", f"{sub}:{verb}", {"ackIds": ids, **extra})
        assert (code, status) == (400, "INVALID_ARGUMENT") and "524288" in message  # by size, before any id


def test_repeated_ack_ids_settle_the_message_once(api: Api, unique: str) -> None:  # noqa: F811
    topic, sub = _topic_and_sub(api, unique)
    api.call("POST", topic + ":publish", {"messages": [{"data": base64.b64encode(b"once").decode()}]})
    got: list[dict[str, object]] = []
    for _ in range(50):  # bounded wait for the message
        got = api.call("POST", sub + ":pull", {"maxMessages": 1, "returnImmediately": True}).json().get(
            "receivedMessages", [])
        if got:
            break
    assert got, "the message never arrived"
    ack_id = str(got[0]["ackId"])
    assert api.call("POST", sub + ":acknowledge", {"ackIds": [ack_id] * 500}).status_code == 200
