"""google-api-python-client (static discovery document, anonymous credentials) against the real local stack."""

from __future__ import annotations

import json
import time
from typing import Any

import googleapiclient.discovery
import googleapiclient.errors
import pytest

from tests.e2e.google_helpers import sub_path, topic_path

pytestmark = pytest.mark.e2e


def _http_error(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(googleapiclient.errors.HttpError) as err:
        call.execute()
    body = json.loads(err.value.content)
    assert set(body) == {"error"}
    assert body["error"]["code"] == err.value.resp.status
    return err.value.resp.status, body["error"]


def test_discovery_publish_pull_ack(discovery: Any, unique: str) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic, sub = topic_path(f"dt-{unique}"), sub_path(f"ds-{unique}")
    assert topics.create(name=topic, body={"labels": {"via": "discovery"}}).execute() == {
        "name": topic, "labels": {"via": "discovery"}}
    created = subs.create(name=sub, body={"topic": topic, "ackDeadlineSeconds": 15}).execute()
    assert (created["name"], created["topic"], created["ackDeadlineSeconds"]) == (sub, topic, 15)

    ids = topics.publish(topic=topic, body={"messages": [
        {"data": "aGVsbG8=", "attributes": {"a": "1"}}, {"data": "d29ybGQ="}]}).execute()["messageIds"]
    assert len(ids) == 2
    received: list[dict[str, Any]] = []
    end = time.monotonic() + 15
    while len(received) < 2 and time.monotonic() < end:
        received += subs.pull(subscription=sub, body={"maxMessages": 10}).execute().get("receivedMessages", [])
    by_id = {r["message"]["messageId"]: r for r in received}
    assert set(by_id) == set(ids)
    assert by_id[ids[0]]["message"]["data"] == "aGVsbG8="
    assert by_id[ids[0]]["message"]["attributes"] == {"a": "1"}
    assert set(by_id[ids[1]]["message"]) == {"data", "messageId", "publishTime"}

    nack = by_id[ids[1]]["ackId"]
    assert subs.modifyAckDeadline(subscription=sub, body={"ackIds": [nack], "ackDeadlineSeconds": 0}).execute() == {}
    assert subs.acknowledge(subscription=sub, body={"ackIds": [by_id[ids[0]]["ackId"]]}).execute() == {}
    again = subs.pull(subscription=sub, body={"maxMessages": 10}).execute()["receivedMessages"]
    assert [r["message"]["messageId"] for r in again] == [ids[1]]
    subs.acknowledge(subscription=sub, body={"ackIds": [again[0]["ackId"]]}).execute()
    assert subs.pull(subscription=sub, body={"maxMessages": 10, "returnImmediately": True}).execute() == {}
    assert subs.delete(subscription=sub).execute() == {}
    assert topics.delete(topic=topic).execute() == {}


def test_discovery_list_pagination(discovery: Any, unique: str) -> None:
    project = f"projects/p-{unique}"
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    names = sorted(f"{project}/topics/top{i}" for i in range(5))
    for name in names:
        topics.create(name=name, body={}).execute()
    sub_names = sorted(f"{project}/subscriptions/sub{i}" for i in range(3))
    for name in sub_names:
        subs.create(name=name, body={"topic": names[0]}).execute()

    def walk(resource: Any, key: str, **kwargs: Any) -> list[Any]:
        seen: list[Any] = []
        request = resource.list(**kwargs)
        while request is not None:
            page = request.execute()
            assert len(page.get(key, [])) <= 2
            seen += page.get(key, [])
            request = resource.list_next(request, page)
        return seen

    assert sorted(t["name"] for t in walk(topics, "topics", project=project, pageSize=2)) == names
    assert sorted(s["name"] for s in walk(subs, "subscriptions", project=project, pageSize=2)) == sub_names
    listed = walk(topics.subscriptions(), "subscriptions", topic=names[0], pageSize=2)
    assert sorted(listed) == sub_names


def test_discovery_errors(discovery: Any, unique: str) -> None:
    topics, subs = discovery.projects().topics(), discovery.projects().subscriptions()
    topic = topic_path(f"dt-{unique}")
    topics.create(name=topic, body={}).execute()
    cases = [
        (topics.get(topic=topic_path(f"missing-{unique}")), 404, "NOT_FOUND"),
        (topics.create(name=topic, body={}), 409, "ALREADY_EXISTS"),
        (topics.create(name=topic_path("9starts-with-digit"), body={}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic, body={"messages": []}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic, body={"messages": [{}]}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic, body={"messages": [{"data": "not base64!"}]}), 400, "INVALID_ARGUMENT"),
        (topics.publish(topic=topic_path(f"missing-{unique}"), body={"messages": [{"data": "eA=="}]}), 404,
         "NOT_FOUND"),
        (topics.patch(name=topic, body={"topic": {"labels": {"a": "b"}}}), 400, "INVALID_ARGUMENT"),
        (subs.create(name=sub_path(f"ds-{unique}"), body={"topic": topic_path(f"missing-{unique}")}), 404,
         "NOT_FOUND"),
        (subs.pull(subscription=sub_path(f"missing-{unique}"), body={"maxMessages": 1}), 404, "NOT_FOUND"),
        (subs.get(subscription=sub_path(f"missing-{unique}")), 404, "NOT_FOUND"),
    ]
    for call, code, status in cases:
        got_code, error = _http_error(call)
        assert (got_code, error["status"]) == (code, status), (call.uri, error)
        assert error["message"]
