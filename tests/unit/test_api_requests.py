"""api/parsing.py: every parser turns good input into its typed value and bad input into INVALID_ARGUMENT."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.api import parsing
from chalicelib.core import limits, names
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.models import DeadLetterPolicy, ExpirationPolicy, PushConfig, Subscription, Topic
from chalicelib.core.wire.requests import (
    AcknowledgeRequest,
    ModifyAckDeadlineRequest,
    ModifyPushConfigRequest,
    PageRequest,
    PublishRequest,
    PullRequest,
    UpdateSubscriptionRequest,
    UpdateTopicRequest,
)

TOPIC = names.make("p", "topics", "t-1")
SUB = names.make("p", "subscriptions", "s-1")
NOT_OBJECTS: list[Any] = [[], "x", 1, True, None]


def refused(parse: Any, *args: Any, match: str | None = None) -> None:
    with pytest.raises(InvalidArgument, match=match):
        parse(*args)


# -- create topic / subscription ------------------------------------------------------------------------
def test_topic_request() -> None:
    assert parsing.topic_request({}, TOPIC) == Topic()
    got = parsing.topic_request({"name": TOPIC.path, "labels": {"a": "b"}, "messageRetentionDuration": "600s"}, TOPIC)
    assert got == Topic(name=TOPIC.path, labels={"a": "b"}, message_retention_duration="600s")


@pytest.mark.parametrize(("body", "match"), [
    *((b, "must be a JSON object") for b in NOT_OBJECTS),
    ({"bogus": 1}, 'Unknown name "bogus"'),
    ({"labels": "x"}, "labels"),
    ({"messageRetentionDuration": "1s"}, "message_retention_duration"),
    ({"name": "projects/p/topics/other"}, "does not match the URL"),
])
def test_topic_request_refuses(body: Any, match: str) -> None:
    refused(parsing.topic_request, body, TOPIC, match=match)


def test_subscription_request() -> None:
    body = {"topic": TOPIC.path, "ackDeadlineSeconds": "20", "expiration_policy": {"ttl": "86400s"},
            "deadLetterPolicy": {"deadLetterTopic": "projects/p/topics/dl", "maxDeliveryAttempts": 5}}
    assert parsing.subscription_request(body, SUB) == Subscription(
        topic=TOPIC.path, ack_deadline_seconds=20, expiration_policy=ExpirationPolicy(ttl="86400s"),
        dead_letter_policy=DeadLetterPolicy(dead_letter_topic="projects/p/topics/dl", max_delivery_attempts=5))


@pytest.mark.parametrize(("body", "match"), [
    *((b, "must be a JSON object") for b in NOT_OBJECTS),
    ({"topic": 5}, "topic"),
    ({"topic": TOPIC.path, "ackDeadlineSeconds": 601}, "ack_deadline_seconds"),
    ({"topic": TOPIC.path, "ackDeadline": 10}, 'Unknown name "ackDeadline"'),
    ({"topic": TOPIC.path, "pushConfig": []}, "pushConfig"),
    ({"topic": TOPIC.path, "bigqueryConfig": {"table": "p.d.t"}}, "not supported"),
    ({"topic": TOPIC.path, "name": "projects/p/subscriptions/other"}, "does not match the URL"),
])
def test_subscription_request_refuses(body: Any, match: str) -> None:
    refused(parsing.subscription_request, body, SUB, match=match)


# -- patch ----------------------------------------------------------------------------------------------
def test_update_topic_request() -> None:
    got = parsing.update_topic_request({"topic": {"labels": {"a": "b"}}, "updateMask": "labels"}, TOPIC)
    assert got == UpdateTopicRequest(Topic(labels={"a": "b"}), ("labels",))
    both = parsing.update_topic_request({"update_mask": {"paths": ["labels", "messageRetentionDuration"]}}, TOPIC)
    assert both == UpdateTopicRequest(Topic(), ("labels", "message_retention_duration"))


@pytest.mark.parametrize(("body", "match"), [
    *((b, "must be a JSON object") for b in NOT_OBJECTS),
    ({"topic": {"labels": {"a": "b"}}}, "update_mask"),
    ({"topic": {}, "updateMask": ""}, "update_mask"),
    ({"topic": {}, "updateMask": "name"}, "name cannot be updated"),
    ({"topic": {}, "updateMask": 5}, "update_mask"),
    ({"topic": {}, "updateMask": {"paths": [1]}}, "update_mask.paths"),
    ({"topic": "x", "updateMask": "labels"}, "topic must be a JSON object"),
    ({"topic": {"bogus": 1}, "updateMask": "labels"}, 'Unknown name "bogus"'),
    ({"topic": {"name": "projects/p/topics/other"}, "updateMask": "labels"}, "does not match the URL"),
])
def test_update_topic_request_refuses(body: Any, match: str) -> None:
    refused(parsing.update_topic_request, body, TOPIC, match=match)


def test_update_subscription_request() -> None:
    body = {"subscription": {"ack_deadline_seconds": 20, "labels": {"k": "v"}},
            "updateMask": "ackDeadlineSeconds,labels"}
    assert parsing.update_subscription_request(body, SUB) == UpdateSubscriptionRequest(
        Subscription(ack_deadline_seconds=20, labels={"k": "v"}), ("ack_deadline_seconds", "labels"))
    # An absent (or null) subscription is the empty message: the masked fields are cleared.
    cleared = parsing.update_subscription_request({"subscription": None, "updateMask": "pushConfig"}, SUB)
    assert cleared == UpdateSubscriptionRequest(Subscription(), ("push_config",))


@pytest.mark.parametrize(("body", "match"), [
    *((b, "must be a JSON object") for b in NOT_OBJECTS),
    ({"subscription": {"ackDeadlineSeconds": 30}}, "update_mask"),
    ({"subscription": {}, "updateMask": "topic"}, "topic cannot be updated"),
    ({"subscription": {}, "updateMask": "filter"}, "filter cannot be updated"),
    ({"subscription": {"ackDeadlineSeconds": 5}, "updateMask": "ackDeadlineSeconds"}, "ack_deadline_seconds"),
    ({"subscription": [], "updateMask": "labels"}, "subscription must be a JSON object"),
    ({"subscription": {"name": "projects/p/subscriptions/x"}, "updateMask": "labels"}, "does not match the URL"),
])
def test_update_subscription_request_refuses(body: Any, match: str) -> None:
    refused(parsing.update_subscription_request, body, SUB, match=match)


# -- modifyPushConfig -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "want"), [
    ({}, PushConfig()),
    ({"pushConfig": None}, PushConfig()),
    ({"pushConfig": {}}, PushConfig()),
    ({"pushConfig": {"pushEndpoint": "https://x/h"}, "subscription": SUB.path}, PushConfig(push_endpoint="https://x/h")),
    ({"push_config": {"push_endpoint": "https://x/h", "attributes": {"x-goog-version": "v1"}}},
     PushConfig(push_endpoint="https://x/h", attributes={"x-goog-version": "v1"})),
])
def test_modify_push_config_request(body: dict[str, Any], want: PushConfig) -> None:
    assert parsing.modify_push_config_request(body, SUB) == ModifyPushConfigRequest(want)


@pytest.mark.parametrize(("body", "match"), [
    *((b, "must be a JSON object") for b in NOT_OBJECTS),
    ({"pushConfig": {}, "extra": 1}, 'Unknown name "extra"'),
    ({"pushConfig": {"endpoint": "https://x"}}, 'Unknown name "endpoint"'),
    ({"pushConfig": []}, "push_config must be a JSON object"),
    ({"pushConfig": {}, "subscription": "projects/p/subscriptions/other"}, "does not match the URL"),
])
def test_modify_push_config_request_refuses(body: Any, match: str) -> None:
    refused(parsing.modify_push_config_request, body, SUB, match=match)


# -- publish --------------------------------------------------------------------------------------------
def test_publish_request() -> None:
    body = {"topic": TOPIC.path, "messages": [{"data": "aGk=", "attributes": {"k": "v"}, "orderingKey": "o"},
                                              {"attributes": {"only": "attrs"}}]}
    assert parsing.publish_request(body) == PublishRequest((NewMessage(b"hi", {"k": "v"}, "o"),
                                                             NewMessage(b"", {"only": "attrs"})))


@pytest.mark.parametrize(("body", "match"), [
    *((b, "must be a JSON object") for b in NOT_OBJECTS),
    ({}, "No messages"),
    ({"messages": 5}, "must be a list"),
    ({"messages": [5]}, "JSON object"),
    ({"messages": [{}]}, "empty"),
    ({"messages": [{"data": "not base64!"}]}, "base64"),
    ({"messages": [{"data": "eA==", "attributes": {"k": 5}}]}, "attributes"),
    ({"messages": [{"data": "eA==", "orderingKey": 5}]}, "ordering_key"),
    ({"messages": [{"data": "eA=="}], "extra": True}, 'Unknown name "extra"'),
    ({"messages": [{"data": "eA=="}] * (limits.MAX_MESSAGES_PER_PUBLISH + 1)}, "at most"),
])
def test_publish_request_refuses(body: Any, match: str) -> None:
    refused(parsing.publish_request, body, match=match)


# -- pull, acknowledge, modifyAckDeadline ---------------------------------------------------------------
def test_pull_request() -> None:
    assert parsing.pull_request({"maxMessages": 5}) == PullRequest(5, False)
    assert parsing.pull_request({"max_messages": "7", "returnImmediately": "true"}) == PullRequest(7, True)
    assert parsing.pull_request({"maxMessages": limits.MAX_PULL_MESSAGES}).max_messages == limits.MAX_PULL_MESSAGES


@pytest.mark.parametrize("body", [*NOT_OBJECTS, {}, {"maxMessages": 0}, {"maxMessages": -1},
                                  {"maxMessages": limits.MAX_PULL_MESSAGES + 1}, {"maxMessages": "x"},
                                  {"maxMessages": 10.7}, {"maxMessages": 2, "returnImmediately": "x"}])
def test_pull_request_refuses(body: Any) -> None:
    refused(parsing.pull_request, body)


def test_acknowledge_request() -> None:
    assert parsing.acknowledge_request({"ackIds": ["a", "b"]}) == AcknowledgeRequest(("a", "b"))
    assert parsing.acknowledge_request({"ack_ids": ["c"]}) == AcknowledgeRequest(("c",))


@pytest.mark.parametrize("body", [*NOT_OBJECTS, {}, {"ackIds": []}, {"ackIds": "x"}, {"ackIds": [5]},
                                  {"ackIds": [None]}, {"ack_ids": None}])
def test_acknowledge_request_refuses(body: Any) -> None:
    refused(parsing.acknowledge_request, body)


def test_modify_ack_deadline_request() -> None:
    got = parsing.modify_ack_deadline_request({"ackIds": ["a"], "ackDeadlineSeconds": 0})
    assert got == ModifyAckDeadlineRequest(("a",), 0)
    got = parsing.modify_ack_deadline_request({"ack_ids": ["a"], "ack_deadline_seconds": "600"})
    assert got == ModifyAckDeadlineRequest(("a",), 600)


@pytest.mark.parametrize("body", [*NOT_OBJECTS, {"ackIds": ["x"], "ackDeadlineSeconds": -1},
                                  {"ackIds": ["x"], "ackDeadlineSeconds": limits.MODIFY_DEADLINE_MAX + 1},
                                  {"ackIds": ["x"], "ackDeadlineSeconds": "y"}, {"ackDeadlineSeconds": 10},
                                  {"ackIds": ["x"], "ackDeadlineSeconds": [1]}])
def test_modify_ack_deadline_request_refuses(body: Any) -> None:
    refused(parsing.modify_ack_deadline_request, body)


# -- list paging ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("params", "want"), [
    ({}, PageRequest(limits.DEFAULT_PAGE_SIZE)),
    ({"pageSize": "0"}, PageRequest(limits.DEFAULT_PAGE_SIZE)),
    ({"pageSize": ""}, PageRequest(limits.DEFAULT_PAGE_SIZE)),
    ({"page_size": "2", "page_token": "t"}, PageRequest(2, "t")),
    ({"pageSize": "99999999999999999999", "pageToken": "u"}, PageRequest(limits.MAX_PAGE_SIZE, "u")),
])
def test_page_request(params: dict[str, str], want: PageRequest) -> None:
    assert parsing.page_request(params) == want


@pytest.mark.parametrize("params", [{"pageSize": "x"}, {"pageSize": "-1"}, {"pageSize": "1.5"}])
def test_page_request_refuses(params: dict[str, str]) -> None:
    refused(parsing.page_request, params)


# -- hostile input ----------------------------------------------------------------------------------
def test_ack_ids_are_deduplicated_in_order() -> None:
    assert parsing.acknowledge_request({"ackIds": ["b", "a", "b", "a"]}).ack_ids == ("b", "a")


def test_ack_requests_over_google_s_payload_limit_are_refused() -> None:
    ids = ["x" * 500] * 1100  # 550,000 bytes of ids
    with pytest.raises(InvalidArgument, match="524288"):
        parsing.acknowledge_request({"ackIds": ids})
    with pytest.raises(InvalidArgument, match="524288"):
        parsing.modify_ack_deadline_request({"ackIds": ids, "ackDeadlineSeconds": 10})
    assert len(parsing.acknowledge_request({"ackIds": ids[:1000]}).ack_ids) == 1  # 500,000 bytes pass


def test_the_publish_total_is_counted_in_bytes() -> None:
    value = "é" * 512  # 512 characters, 1,024 bytes
    message = {"data": "eA==", "attributes": {f"k{i}": value for i in range(100)}}
    count = limits.MAX_REQUEST_BYTES // (100 * 1024) + 1  # characters would stay under the limit, bytes do not
    with pytest.raises(InvalidArgument, match="at most"):
        parsing.publish_request({"messages": [message] * count})
