"""The cases the compatibility tests send to Google's Pub/Sub emulator and to Metro, and the known differences.

Every known difference is listed with its reason: where the emulator and Google differ, Metro follows
Google's documented behaviour; a difference that is not listed fails the test.
"""

from __future__ import annotations

from typing import Any

from tests.compat.conftest import PROJECT

# Fields Metro includes that the emulator leaves out (matched by the last key of their path).
METRO_ADDS = {
    "state": "Subscription.state is output by Google (ACTIVE, or 1 with enum-encoding=int); the emulator omits it",
    "expirationPolicy": "Google fills in the default 31-day expiration policy on output; the emulator omits it",
}

# (emulator status, Metro status, reason) of each request on which the two knowingly disagree.
KNOWN_DIFFERENCES: dict[str, tuple[int, int, str]] = {
    "patch topic labels": (400, 200, "the emulator cannot update labels ('labels is not a known Topic field'); "
                                     "Google and Metro can"),
    "patch subscription labels": (400, 200, "as for topics: the emulator does not know the labels update mask"),
    "list subscriptions of missing topic": (200, 404, "the emulator lists nothing; Google answers NOT_FOUND"),
    "list with invalid page token": (200, 400, "the emulator ignores a page token it cannot read; Metro refuses it "
                                               "(Google: INVALID_ARGUMENT)"),
    "list with negative page size": (200, 400, "the emulator ignores it; Google and Metro refuse it"),
    "list in invalid project": (200, 400, "the emulator lists nothing for any project string; Metro checks it"),
    "create subscription with 5s ack deadline": (200, 400, "Google's minimum ack deadline is 10 s; the emulator "
                                                           "keeps 5"),
    "publish goog attribute": (200, 400, "Google reserves attribute keys starting with 'goog'; the emulator "
                                         "accepts them"),
    "publish empty attribute key": (200, 400, "Google refuses an empty attribute key; the emulator accepts it"),
    "pull zero messages": (400, 400, "both refuse max_messages=0 (messages differ)"),
    "pull negative max messages": (200, 400, "max_messages must be positive; the emulator ignores the sign"),
    "pull more than 1000 messages": (200, 400, "Metro caps max_messages at 1000 and says so; the emulator "
                                               "accepts any number"),
    "patch missing topic without mask": (404, 400, "Metro validates the request before looking the topic up"),
}

_TOPIC = "{topic}"
SAME_CASES: list[tuple[str, str, str, Any, str | None]] = [
    # (case, method, path, JSON body, raw body); {topic} {sub} {new} {missing} are filled in
    ("create topic with labels", "PUT", "/topics/{new}", {"labels": {"a": "b", "c": ""}}, None),
    ("create topic with empty body", "PUT", "/topics/{new}", None, ""),
    ("create duplicate topic", "PUT", "/topics/{topic}", None, None),
    ("get topic", "GET", "/topics/{topic}", None, None),
    ("get topic alt=json", "GET", "/topics/{topic}?alt=json", None, None),
    ("get missing topic", "GET", "/topics/{missing}", None, None),
    ("delete missing topic", "DELETE", "/topics/{missing}", None, None),
    ("topic id too short", "PUT", "/topics/ab", None, None),
    ("topic id starting with a digit", "PUT", "/topics/1abc", None, None),
    ("topic id starting with goog", "PUT", "/topics/goog-abc", None, None),
    ("topic id with a space", "PUT", "/topics/abc%20def", None, None),
    ("topic id too long", "PUT", "/topics/" + "a" * 256, None, None),
    ("topic id with + ~ %", "PUT", "/topics/{new}%2B~%25", None, None),
    ("topic body not an object", "PUT", "/topics/{new}", None, "[]"),
    ("topic body malformed", "PUT", "/topics/{new}", None, "{not json"),
    ("topic body unknown field", "PUT", "/topics/{new}", {"bogus": 1}, None),
    ("patch topic without mask", "PATCH", "/topics/{topic}", {"topic": {"labels": {"a": "b"}}}, None),
    ("patch topic with empty mask", "PATCH", "/topics/{topic}", {"topic": {"labels": {"a": "b"}}, "updateMask": ""},
     None),
    ("patch missing topic", "PATCH", "/topics/{missing}", {"topic": {"labels": {"a": "b"}}, "updateMask": "labels"},
     None),
    ("create subscription", "PUT", "/subscriptions/{new}", {"topic": _TOPIC}, None),
    ("create subscription with settings", "PUT", "/subscriptions/{new}",
     {"topic": _TOPIC, "ackDeadlineSeconds": 30, "retainAckedMessages": True, "labels": {"k": "v"},
      "messageRetentionDuration": "3600s", "enableMessageOrdering": True, "filter": 'attributes.x = "y"'}, None),
    ("create duplicate subscription", "PUT", "/subscriptions/{sub}", {"topic": _TOPIC}, None),
    ("create subscription of missing topic", "PUT", "/subscriptions/{new}",
     {"topic": f"projects/{PROJECT}/topics/missing-topic"}, None),
    ("create subscription with invalid topic name", "PUT", "/subscriptions/{new}", {"topic": "bad"}, None),
    ("create subscription without topic", "PUT", "/subscriptions/{new}", {}, None),
    ("create subscription with 700s ack deadline", "PUT", "/subscriptions/{new}",
     {"topic": _TOPIC, "ackDeadlineSeconds": 700}, None),
    ("create subscription with 60s retention", "PUT", "/subscriptions/{new}",
     {"topic": _TOPIC, "messageRetentionDuration": "60s"}, None),
    ("subscription id too short", "PUT", "/subscriptions/ab", {"topic": _TOPIC}, None),
    ("get subscription", "GET", "/subscriptions/{sub}", None, None),
    ("get subscription int enums", "GET", "/subscriptions/{sub}?$alt=json;enum-encoding=int", None, None),
    ("get missing subscription", "GET", "/subscriptions/{missing}", None, None),
    ("delete missing subscription", "DELETE", "/subscriptions/{missing}", None, None),
    ("patch subscription without mask", "PATCH", "/subscriptions/{sub}", {"subscription": {"ackDeadlineSeconds": 20}},
     None),
    ("patch subscription topic", "PATCH", "/subscriptions/{sub}",
     {"subscription": {"topic": _TOPIC}, "updateMask": "topic"}, None),
    ("patch subscription ack deadline", "PATCH", "/subscriptions/{sub}",
     {"subscription": {"ackDeadlineSeconds": 20}, "updateMask": "ackDeadlineSeconds"}, None),
    ("patch missing subscription", "PATCH", "/subscriptions/{missing}",
     {"subscription": {"ackDeadlineSeconds": 20}, "updateMask": "ackDeadlineSeconds"}, None),
    ("list subscriptions of topic", "GET", "/topics/{topic}/subscriptions", None, None),
    ("publish no messages", "POST", "/topics/{topic}:publish", {"messages": []}, None),
    ("publish without messages field", "POST", "/topics/{topic}:publish", {}, None),
    ("publish empty message", "POST", "/topics/{topic}:publish", {"messages": [{}]}, None),
    ("publish one empty message of two", "POST", "/topics/{topic}:publish",
     {"messages": [{"data": "eA=="}, {"data": ""}]}, None),
    ("publish bad base64", "POST", "/topics/{topic}:publish", {"messages": [{"data": "!!!"}]}, None),
    ("publish messages not a list", "POST", "/topics/{topic}:publish", None, '{"messages": 5}'),
    ("publish malformed", "POST", "/topics/{topic}:publish", None, '{"messages": ['),
    ("publish to missing topic", "POST", "/topics/{missing}:publish", {"messages": [{"data": "eA=="}]}, None),
    ("publish unpadded base64", "POST", "/topics/{other}:publish", {"messages": [{"data": "aGk"}]}, None),
    ("publish url-safe base64", "POST", "/topics/{other}:publish", {"messages": [{"data": "aG-_"}]}, None),
    ("publish attributes only", "POST", "/topics/{other}:publish", {"messages": [{"attributes": {"a": "b"}}]}, None),
    ("publish invalid publishTime", "POST", "/topics/{topic}:publish",
     {"messages": [{"data": "eA==", "publishTime": 5}]}, None),
    ("publish invalid messageId", "POST", "/topics/{topic}:publish", {"messages": [{"data": "eA==", "messageId": []}]},
     None),
    ("publish ignores output-only fields", "POST", "/topics/{other}:publish",
     {"messages": [{"data": "eA==", "publishTime": "2020-01-01T00:00:00Z", "messageId": "x"}]}, None),
    ("publish null attributes", "POST", "/topics/{other}:publish", {"messages": [{"data": "eA==", "attributes": None}]},
     None),
    ("pull missing subscription", "POST", "/subscriptions/{missing}:pull", {"maxMessages": 1}, None),
    ("pull without max messages", "POST", "/subscriptions/{sub}:pull", {}, None),
    ("pull max messages not a number", "POST", "/subscriptions/{sub}:pull", None, '{"maxMessages": "x"}'),
    ("pull nothing", "POST", "/subscriptions/{sub}:pull", {"maxMessages": 5, "returnImmediately": True}, None),
    ("pull nothing snake_case", "POST", "/subscriptions/{sub}:pull", {"max_messages": 5, "return_immediately": True},
     None),
    ("ack invalid id", "POST", "/subscriptions/{sub}:acknowledge", {"ackIds": ["bogus"]}, None),
    ("ack no ids", "POST", "/subscriptions/{sub}:acknowledge", {"ackIds": []}, None),
    ("ack missing subscription", "POST", "/subscriptions/{missing}:acknowledge", {"ackIds": ["bogus"]}, None),
    ("modack invalid id", "POST", "/subscriptions/{sub}:modifyAckDeadline",
     {"ackIds": ["bogus"], "ackDeadlineSeconds": 10}, None),
    ("modack no ids", "POST", "/subscriptions/{sub}:modifyAckDeadline", {"ackIds": [], "ackDeadlineSeconds": 10},
     None),
    ("modack negative deadline", "POST", "/subscriptions/{sub}:modifyAckDeadline",
     {"ackIds": ["bogus"], "ackDeadlineSeconds": -1}, None),
    ("modack missing subscription", "POST", "/subscriptions/{missing}:modifyAckDeadline",
     {"ackIds": ["bogus"], "ackDeadlineSeconds": 10}, None),
]

DIFFERENT_CASES: list[tuple[str, str, str, Any]] = [
    ("patch topic labels", "PATCH", "/topics/{topic}", {"topic": {"labels": {"x": "y"}}, "updateMask": "labels"}),
    ("patch subscription labels", "PATCH", "/subscriptions/{sub}",
     {"subscription": {"labels": {"x": "y"}}, "updateMask": "labels"}),
    ("list subscriptions of missing topic", "GET", "/topics/{missing}/subscriptions", None),
    ("list with invalid page token", "GET", "/topics?pageToken=garbage", None),
    ("list with negative page size", "GET", "/topics?pageSize=-1", None),
    ("list in invalid project", "GET", "/v1/projects/bad%20project/topics", None),
    ("create subscription with 5s ack deadline", "PUT", "/subscriptions/{new}",
     {"topic": _TOPIC, "ackDeadlineSeconds": 5}),
    ("publish goog attribute", "POST", "/topics/{other}:publish",
     {"messages": [{"data": "eA==", "attributes": {"googthing": "x"}}]}),
    ("publish empty attribute key", "POST", "/topics/{other}:publish",
     {"messages": [{"data": "eA==", "attributes": {"": "x"}}]}),
    ("pull zero messages", "POST", "/subscriptions/{sub}:pull", {"maxMessages": 0}),
    ("pull negative max messages", "POST", "/subscriptions/{empty}:pull", {"maxMessages": -1,
                                                                           "returnImmediately": True}),
    ("pull more than 1000 messages", "POST", "/subscriptions/{empty}:pull", {"maxMessages": 5000,
                                                                             "returnImmediately": True}),
    ("patch missing topic without mask", "PATCH", "/topics/{missing}", {"topic": {"labels": {"a": "b"}}}),
]
