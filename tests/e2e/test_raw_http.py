"""Raw HTTP against the real local stack: dialects, bad input, and no 5xx whatever is sent."""

from __future__ import annotations

import base64
import itertools
import threading
import time
from typing import Any

import pytest
import requests

from tests.stack import RunningStack

pytestmark = pytest.mark.e2e

PROJECT = "e2e-project"
INT_ENUMS = {"$alt": "json;enum-encoding=int"}  # what google-cloud-pubsub's REST transport sends


class Api:
    """A thin requests wrapper that checks every answer is well formed (and never a 5xx)."""

    def __init__(self, base: str) -> None:
        self.base = base
        # No requests.Session: one connection per request. On a kept-alive connection each answer of the
        # local server waits ~40 ms for a delayed ACK (Nagle's algorithm is on for its sockets), which
        # would make up most of this module's run time. (The Google client tests do keep connections.)

    def call(self, method: str, path: str, body: Any = None, raw: str | bytes | None = None,
             params: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> requests.Response:
        kwargs: dict[str, Any] = {"params": params, "timeout": 30}
        if raw is not None:
            kwargs["data"] = raw
            kwargs["headers"] = {"Content-Type": "application/json", **(headers or {})}
        elif body is not None:
            kwargs["json"] = body
            kwargs["headers"] = headers
        resp = requests.request(method, self.base + path, **kwargs)
        assert resp.status_code < 500, f"{method} {path} {raw or body!r} -> {resp.status_code} {resp.text[:300]}"
        if resp.status_code >= 400:
            err = resp.json()
            assert set(err) == {"error"}, resp.text
            assert set(err["error"]) >= {"code", "message", "status"}, resp.text
            assert err["error"]["code"] == resp.status_code
        return resp

    def error(self, method: str, path: str, body: Any = None, raw: str | bytes | None = None,
              params: dict[str, str] | None = None) -> tuple[int, str, str]:
        resp = self.call(method, path, body, raw, params)
        assert resp.status_code >= 400, f"{method} {path} unexpectedly succeeded: {resp.text[:300]}"
        err = resp.json()["error"]
        return resp.status_code, err["status"], err["message"]


@pytest.fixture(scope="module")
def api(stack: RunningStack) -> Api:
    return Api(stack.url)


def _make(api: Api, unique: str) -> dict[str, str]:
    topic, sub = f"t-{unique}", f"s-{unique}"
    api.call("PUT", f"/v1/projects/{PROJECT}/topics/{topic}")
    api.call("PUT", f"/v1/projects/{PROJECT}/subscriptions/{sub}",
             {"topic": f"projects/{PROJECT}/topics/{topic}"})
    return {
        "topic": f"projects/{PROJECT}/topics/{topic}",
        "sub": f"projects/{PROJECT}/subscriptions/{sub}",
        "topic_url": f"/v1/projects/{PROJECT}/topics/{topic}",
        "sub_url": f"/v1/projects/{PROJECT}/subscriptions/{sub}",
    }


@pytest.fixture
def names(api: Api, unique: str) -> dict[str, str]:
    """A topic with one subscription of this test's own."""
    return _make(api, unique)


@pytest.fixture(scope="module")
def shared(api: Api) -> dict[str, str]:
    """A topic with one subscription for the tests that only send what must be refused."""
    return _make(api, f"shared-{time.time_ns() % 10**9}")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pull_until(api: Api, sub_url: str, n: int, timeout: float = 15) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        got += api.call("POST", sub_url + ":pull", {"maxMessages": n - len(got)}).json().get("receivedMessages", [])
    assert len(got) == n
    return got


# -- basics -----------------------------------------------------------------------------------------


def test_root_names_metro_its_ports_and_its_description(api: Api, stack: RunningStack) -> None:
    resp = api.call("GET", "/")
    assert (resp.status_code, resp.headers["Content-Type"]) == (200, "application/json")
    info = resp.json()
    assert (info["name"], info["docs"], info["openapi"]) == ("Metro", "/docs", "/openapi.json")
    assert info["ports"] == {"rest": int(stack.url.rsplit(":", 1)[1]), "ams": int(stack.ams_host.rsplit(":", 1)[1])}
    assert "PUBSUB_EMULATOR_HOST" in info["grpc"]
    html = requests.get(stack.url + "/", headers={"Accept": "text/html,*/*;q=0.8"}, timeout=30)  # a browser's
    assert html.headers["Content-Type"].startswith("text/html") and "/docs" in html.text
    for path in (info["docs"], info["openapi"]):
        assert api.call("GET", path).status_code == 200


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/nothing"),
    ("GET", "/v2/projects/p/topics"),
    ("GET", f"/v1/projects/{PROJECT}/snapshotz/abcd"),
    ("POST", f"/v1/projects/{PROJECT}/topics/abcd:bogusVerb"),
    ("GET", f"/v1/projects/{PROJECT}/topics/abcd:publish"),
    ("DELETE", f"/v1/projects/{PROJECT}/subscriptions/abcd:pull"),
    ("PUT", f"/v1/projects/{PROJECT}/topics/abcd:publish"),
])
def test_unknown_urls_answer_404_json(api: Api, method: str, path: str) -> None:
    assert api.error(method, path)[:2] == (404, "NOT_FOUND")


def test_alt_json_dialects(api: Api, names: dict[str, str]) -> None:
    plain = api.call("GET", names["sub_url"], params={"alt": "json"}).json()
    assert plain["state"] == "ACTIVE"
    assert api.call("GET", names["sub_url"], params={"$alt": "json"}).json()["state"] == "ACTIVE"
    as_int = api.call("GET", names["sub_url"], params=INT_ENUMS).json()
    assert as_int["state"] == 1
    assert {k: v for k, v in as_int.items() if k != "state"} == {k: v for k, v in plain.items() if k != "state"}
    listed = api.call("GET", f"/v1/projects/{PROJECT}/subscriptions", params={**INT_ENUMS, "pageSize": "1000"}).json()
    assert {s["state"] for s in listed["subscriptions"]} == {1}
    # Errors are the same JSON envelope in every dialect.
    assert api.error("GET", names["sub_url"] + "x", params=INT_ENUMS)[:2] == (404, "NOT_FOUND")
    # Requests may use either field spelling.
    patched = api.call("PATCH", names["sub_url"], {"subscription": {"ack_deadline_seconds": 20},
                                                   "update_mask": "ack_deadline_seconds"}, params=INT_ENUMS).json()
    assert (patched["ackDeadlineSeconds"], patched["state"]) == (20, 1)


def test_percent_encoded_names(api: Api, unique: str) -> None:
    rid = f"a+b~c%d-{unique}"
    encoded = f"a%2Bb~c%25d-{unique}"
    created = api.call("PUT", f"/v1/projects/{PROJECT}/topics/{encoded}").json()
    assert created == {"name": f"projects/{PROJECT}/topics/{rid}"}
    # A literal '+' in a path is a plus, not a space; '%7E' is '~'.
    assert api.call("GET", f"/v1/projects/{PROJECT}/topics/a+b%7Ec%25d-{unique}").json() == created
    api.call("PUT", f"/v1/projects/{PROJECT}/subscriptions/{encoded}", {"topic": created["name"]})
    api.call("POST", f"/v1/projects/{PROJECT}/topics/{encoded}:publish", {"messages": [{"data": b64(b"%")}]})
    [msg] = pull_until(api, f"/v1/projects/{PROJECT}/subscriptions/{encoded}", 1)
    assert msg["message"]["data"] == b64(b"%")
    assert api.call("POST", f"/v1/projects/{PROJECT}/subscriptions/{encoded}:acknowledge",
                    {"ackIds": [msg["ackId"]]}).json() == {}
    assert api.call("GET", f"/v1/projects/{PROJECT}/topics/{encoded}/subscriptions").json() == {
        "subscriptions": [f"projects/{PROJECT}/subscriptions/{rid}"]}


def test_empty_and_non_json_bodies(api: Api, unique: str) -> None:
    # An empty body is an empty message, as protobuf JSON allows.
    assert api.call("PUT", f"/v1/projects/{PROJECT}/topics/e1-{unique}", raw="").status_code == 200
    assert api.call("PUT", f"/v1/projects/{PROJECT}/topics/e2-{unique}", raw="  \n").status_code == 200
    for i, content_type in enumerate(("text/plain", "application/octet-stream", "application/json; charset=utf-8")):
        resp = requests.put(f"{api.base}/v1/projects/{PROJECT}/topics/e3-{i}-{unique}", data="{}",
                            headers={"Content-Type": content_type}, timeout=30)
        assert resp.status_code == 200, (content_type, resp.text)
    resp = requests.put(f"{api.base}/v1/projects/{PROJECT}/topics/e4-{unique}", data="<x/>",
                        headers={"Content-Type": "application/xml"}, timeout=30)
    assert 400 <= resp.status_code < 500


# -- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["{", "{not json}", '{"a": 1,}', "[1, 2", "nul", "'single'", "\ufeff{}x",
                                 '{"maxMessages": NaN}', '{"maxMessages": Infinity}', '{"maxMessages": 1e400}'])
def test_malformed_json(api: Api, shared: dict[str, str], raw: str) -> None:
    for method, path in (("PUT", shared["topic_url"] + "-new"), ("POST", shared["topic_url"] + ":publish"),
                         ("POST", shared["sub_url"] + ":pull"), ("PATCH", shared["sub_url"])):
        assert api.error(method, path, raw=raw)[:2] == (400, "INVALID_ARGUMENT"), (method, path)


@pytest.mark.parametrize(("where", "body"), [
    ("topic", []),
    ("topic", "a string"),
    ("topic", {"labels": "x"}),
    ("topic", {"labels": {"k": 1}}),
    ("topic", {"messageRetentionDuration": 5}),
    ("topic", {"messageRetentionDuration": "1s"}),
    ("sub", {"topic": 5}),
    ("sub", {"topic": ""}),
    ("sub", {"topic": "{topic}", "ackDeadlineSeconds": "ten"}),
    ("sub", {"topic": "{topic}", "ackDeadlineSeconds": 10.5}),
    ("sub", {"topic": "{topic}", "ackDeadlineSeconds": 601}),
    ("sub", {"topic": "{topic}", "pushConfig": []}),
    ("sub", {"topic": "{topic}", "retainAckedMessages": "maybe"}),
    ("sub", {"topic": "{topic}", "messageRetentionDuration": "forever"}),
    ("sub", {"topic": "{topic}", "expirationPolicy": {"ttl": "1s"}}),
    ("sub", {"topic": "{topic}", "deadLetterPolicy": {"deadLetterTopic": "bad", "maxDeliveryAttempts": 5}}),
    ("sub", {"topic": "{topic}", "deadLetterPolicy": {"deadLetterTopic": "{topic}", "maxDeliveryAttempts": 1}}),
    ("sub", {"topic": "{topic}", "labels": {"k": None}}),
    ("sub", {"topic": "{topic}", "bigqueryConfig": {"table": "p.d.t"}}),
    ("publish", {}),
    ("publish", {"messages": 5}),
    ("publish", {"messages": [5]}),
    ("publish", {"messages": [{"data": 5}]}),
    ("publish", {"messages": [{"data": "not base64!"}]}),
    ("publish", {"messages": [{"data": "eA==", "attributes": []}]}),
    ("publish", {"messages": [{"data": "eA==", "attributes": {"k": 5}}]}),
    ("publish", {"messages": [{"data": "eA==", "attributes": {"": "v"}}]}),
    ("publish", {"messages": [{"data": "eA==", "orderingKey": 5}]}),
    ("publish", {"messages": [{"data": "eA==", "publishTime": 5}]}),
    ("publish", {"messages": [{"data": "eA==", "publishTime": "yesterday"}]}),
    ("publish", {"messages": [{"data": "eA==", "messageId": []}]}),
    ("pull", {}),
    ("pull", {"maxMessages": "x"}),
    ("pull", {"maxMessages": 0}),
    ("pull", {"maxMessages": -1}),
    ("pull", {"maxMessages": 1001}),
    ("pull", {"maxMessages": None}),
    ("pull", {"maxMessages": [1]}),
    ("ack", {}),
    ("ack", {"ackIds": "x"}),
    ("ack", {"ackIds": []}),
    ("ack", {"ackIds": [5]}),
    ("ack", {"ackIds": [None]}),
    ("ack", {"ackIds": ["not-an-ack-id"]}),
    ("modack", {"ackIds": ["not-an-ack-id"], "ackDeadlineSeconds": 10}),
    ("modack", {"ackIds": ["x"], "ackDeadlineSeconds": "y"}),
    ("modack", {"ackIds": ["x"], "ackDeadlineSeconds": -1}),
    ("modack", {"ackIds": ["x"], "ackDeadlineSeconds": 601}),
    ("patch_topic", {"topic": {"labels": {"a": "b"}}}),
    ("patch_topic", {"topic": {"labels": {"a": "b"}}, "updateMask": "name"}),
    ("patch_topic", {"topic": {"labels": {"a": "b"}}, "updateMask": 5}),
    ("patch_topic", {"topic": {"labels": {"a": "b"}}, "updateMask": {"paths": [1]}}),
    ("patch_topic", {"topic": {"labels": {"a": "b"}}, "updateMask": {"paths": "labels"}}),
    ("patch_topic", {"topic": "x", "updateMask": "labels"}),
    ("patch_topic", {"topic": [], "updateMask": "labels"}),
    ("patch_sub", {"subscription": [], "updateMask": "labels"}),
    ("patch_sub", {"subscription": 0, "updateMask": "labels"}),
    ("patch_sub", {"subscription": {"ackDeadlineSeconds": 30}}),
    ("patch_sub", {"subscription": {"ackDeadlineSeconds": 30}, "updateMask": "topic"}),
    ("patch_sub", {"subscription": {"ackDeadlineSeconds": 5}, "updateMask": "ackDeadlineSeconds"}),
    ("patch_sub", {"subscription": {"name": "projects/other/subscriptions/abcd"}, "updateMask": "labels"}),
])
def test_wrong_types_and_values(api: Api, shared: dict[str, str], unique: str, where: str, body: Any) -> None:
    body = _fill(body, shared["topic"])
    target = {
        "topic": ("PUT", f"/v1/projects/{PROJECT}/topics/new-{unique}"),
        "sub": ("PUT", f"/v1/projects/{PROJECT}/subscriptions/new-{unique}"),
        "publish": ("POST", shared["topic_url"] + ":publish"),
        "pull": ("POST", shared["sub_url"] + ":pull"),
        "ack": ("POST", shared["sub_url"] + ":acknowledge"),
        "modack": ("POST", shared["sub_url"] + ":modifyAckDeadline"),
        "patch_topic": ("PATCH", shared["topic_url"]),
        "patch_sub": ("PATCH", shared["sub_url"]),
    }[where]
    assert api.error(*target, body)[:2] == (400, "INVALID_ARGUMENT")


def _fill(value: Any, topic: str) -> Any:
    if value == "{topic}":
        return topic
    if isinstance(value, dict):
        return {k: _fill(v, topic) for k, v in value.items()}
    return value


@pytest.mark.parametrize(("where", "body", "field"), [
    ("topic", {"bogusField": 1}, "bogusField"),
    ("sub", {"topic": "{topic}", "ackDeadline": 10}, "ackDeadline"),
    ("sub", {"topic": "{topic}", "pushConfig": {"endpoint": "https://x"}}, "endpoint"),
    ("publish", {"messages": [{"data": "eA=="}], "extra": True}, "extra"),
    ("publish", {"messages": [{"data": "eA==", "payload": "x"}]}, "payload"),
])
def test_unknown_fields_are_refused(api: Api, shared: dict[str, str], unique: str, where: str, body: Any,
                                    field: str) -> None:
    target = {
        "topic": ("PUT", f"/v1/projects/{PROJECT}/topics/new-{unique}"),
        "sub": ("PUT", f"/v1/projects/{PROJECT}/subscriptions/new-{unique}"),
        "publish": ("POST", shared["topic_url"] + ":publish"),
    }[where]
    code, status, message = api.error(*target, _fill(body, shared["topic"]))
    assert (code, status) == (400, "INVALID_ARGUMENT")
    assert field in message


@pytest.mark.parametrize(("query", "ok"), [
    ({"pageSize": "x"}, False), ({"pageSize": "-1"}, False), ({"pageSize": "1.5"}, False),
    ({"pageToken": "garbage"}, False), ({"pageToken": "eyJ9"}, False), ({"pageToken": "%%%"}, False),
    ({"pageSize": "0"}, True), ({"pageSize": "99999999999999999999"}, True), ({"page_size": "2"}, True),
])
def test_list_parameters(api: Api, shared: dict[str, str], query: dict[str, str], ok: bool) -> None:
    for path in (f"/v1/projects/{PROJECT}/topics", f"/v1/projects/{PROJECT}/subscriptions",
                 shared["topic_url"] + "/subscriptions"):
        resp = api.call("GET", path, params=query)
        assert (resp.status_code == 200) == ok, (path, query, resp.text[:200])
        if not ok:
            assert (resp.status_code, resp.json()["error"]["status"]) == (400, "INVALID_ARGUMENT")


def test_bad_names_in_urls(api: Api) -> None:
    for path in ("/v1/projects/bad%20project/topics", "/v1/projects/bad%20project/subscriptions"):
        assert api.error("GET", path)[:2] == (400, "INVALID_ARGUMENT")
    for path in ("/v1/projects/-x/topics/abcd", f"/v1/projects/{PROJECT}/topics/abc%00d",
                 f"/v1/projects/{PROJECT}/topics/a%2Fbcd", f"/v1/projects/{PROJECT}/topics/%ZZabc",
                 f"/v1/projects/{PROJECT}/subscriptions/goog-abcd", f"/v1/projects/{PROJECT}/subscriptions/a%0Abcd"):
        for method in ("GET", "PUT", "DELETE"):
            code, status, _ = api.error(method, path)
            assert (code, status) in ((400, "INVALID_ARGUMENT"), (404, "NOT_FOUND")), (method, path)


@pytest.mark.parametrize("method", ["PUT", "POST", "DELETE", "PATCH"])
def test_unsupported_method_on_a_collection(api: Api, method: str) -> None:
    assert api.error(method, f"/v1/projects/{PROJECT}/topics")[:2] == (404, "NOT_FOUND")


# -- robustness ------------------------------------------------------------------------------------------

# Bodies that are wrong for every endpoint, then bodies aimed at one endpoint each.
_ANY_BODY = ["", "{", "null", "[]", '"s"', "1", "true", "[1,2]", '{"a":', "\udcff", '{"x":1}', "{}"]
_AIMED = {
    "create_topic": ['{"labels": [1]}', '{"messageRetentionDuration": "1e400s"}', '{"name": 5}'],
    "patch_topic": ['{"topic": []}', '{"topic": 5}', '{"updateMask": 5}', '{"updateMask": {"paths": [1]}}',
                    '{"updateMask": {"paths": null}}', '{"updateMask": ["labels"]}',
                    '{"topic": {"labels": {"a": "b"}}, "updateMask": "labels.a"}'],
    "publish": ['{"messages": null}', '{"messages": [{"data": "===="}]}', '{"messages": [{"data": "e"}]}',
                '{"messages": [{"data": "eA==", "attributes": null}]}', '{"messages": [{"data": null}]}',
                '{"messages": [{"data": "eA==", "publishTime": 5, "messageId": []}]}'],
    "create_sub": ['{"topic": "projects/e2e-project/topics/abcd", "messageRetentionDuration": "1e400s"}',
                   '{"topic": "projects/e2e-project/topics/abcd", "filter": "bogus((("}',
                   '{"topic": "projects/e2e-project/topics/abcd", "retryPolicy": {"minimumBackoff": "-1s"}}',
                   '{"topic": "projects/e2e-project/topics/abcd", "ackDeadlineSeconds": 99999999999999999999999}',
                   '{"topic": null}', '{"topic": "projects/e2e-project/topics/abcd", "pushConfig": null}'],
    "patch_sub": ['{"subscription": [], "updateMask": "labels"}', '{"updateMask": {"paths": [1]}}',
                  '{"subscription": {"retryPolicy": {"minimumBackoff": "9s", "maximumBackoff": "1s"}}, '
                  '"updateMask": "retryPolicy"}',
                  '{"subscription": {"deadLetterPolicy": {"deadLetterTopic": "x"}}, "updateMask": "deadLetterPolicy"}'],
    "pull": ['{"maxMessages": 1e400}', '{"maxMessages": 10.7, "returnImmediately": true}',
             '{"maxMessages": 2, "returnImmediately": "x"}', '{"maxMessages": 1e308}', '{"maxMessages": true}'],
    "ack": ['{"ackIds": [{}]}', '{"ackIds": ["WzEsInByb2plY3RzIl0.xx"]}', '{"ackIds": ["' + "a" * 50_000 + '"]}',
            '{"ackIds": ["x.y.z"]}', '{"ack_ids": null}'],
    "modack": ['{"ackIds": ["x"], "ackDeadlineSeconds": 1e308}', '{"ackIds": ["x"], "ackDeadlineSeconds": 1e400}',
               '{"ackIds": ["x"], "ackDeadlineSeconds": null}', '{"ackIds": ["x"], "ackDeadlineSeconds": [1]}'],
}


def test_no_input_causes_a_server_error(api: Api, names: dict[str, str], unique: str) -> None:
    endpoints = {
        "create_topic": ("PUT", f"/v1/projects/{PROJECT}/topics/fz-{unique}"),
        "patch_topic": ("PATCH", names["topic_url"]),
        "publish": ("POST", names["topic_url"] + ":publish"),
        "create_sub": ("PUT", f"/v1/projects/{PROJECT}/subscriptions/fz-{unique}"),
        "patch_sub": ("PATCH", names["sub_url"]),
        "pull": ("POST", names["sub_url"] + ":pull"),
        "ack": ("POST", names["sub_url"] + ":acknowledge"),
        "modack": ("POST", names["sub_url"] + ":modifyAckDeadline"),
        "delete": ("DELETE", f"/v1/projects/{PROJECT}/topics/missing-{unique}"),
    }
    cases = [*itertools.product(endpoints, _ANY_BODY), *((k, raw) for k, bodies in _AIMED.items() for raw in bodies)]
    for key, raw in cases:
        method, path = endpoints[key]
        resp = api.call(method, path, raw=raw.encode("utf-8", "surrogateescape"))  # asserts < 500
        if resp.status_code == 200 and method == "PUT":  # an acceptable body created the resource
            api.call("DELETE", path)
    # The server is still serving, and a full round trip works.
    assert api.call("GET", "/").json()["name"] == "Metro"
    api.call("POST", names["topic_url"] + ":publish", {"messages": [{"data": b64(b"still alive")}]})
    seen: list[bytes] = []  # behind any message an accepted fuzz publish left in the subscription
    end = time.monotonic() + 15
    while b"still alive" not in seen and time.monotonic() < end:
        got = api.call("POST", names["sub_url"] + ":pull", {"maxMessages": 100}).json().get("receivedMessages", [])
        seen += [base64.b64decode(m["message"].get("data", "")) for m in got]
    assert b"still alive" in seen


def test_concurrent_bad_and_good_requests(api: Api, names: dict[str, str]) -> None:
    """Bad requests on other connections do not disturb a long-polling pull."""
    errors: list[str] = []

    def hammer(path: str) -> None:
        session = requests.Session()
        for raw in [*_ANY_BODY, *_AIMED["pull"]]:
            resp = session.post(api.base + path + ":pull", data=raw.encode("utf-8", "surrogateescape"),
                                headers={"Content-Type": "application/json"}, timeout=30)
            if resp.status_code >= 500:
                errors.append(f"{raw[:40]} -> {resp.status_code}")

    other = names["sub_url"] + "-hammered"
    api.call("PUT", other, {"topic": names["topic"]})
    threads = [threading.Thread(target=hammer, args=(other,)) for _ in range(3)]
    for t in threads:
        t.start()
    api.call("POST", names["topic_url"] + ":publish", {"messages": [{"data": b64(b"x")}]})
    got = pull_until(api, names["sub_url"], 1)
    for t in threads:
        t.join(60)
    assert errors == []
    assert api.call("POST", names["sub_url"] + ":acknowledge", {"ackIds": [got[0]["ackId"]]}).json() == {}


def test_a_query_parameter_given_twice_is_invalid(api: Api) -> None:
    resp = requests.get(f"{api.base}/v1/projects/{PROJECT}/topics", params=[("pageSize", "2"), ("pageSize", "")],
                        timeout=30)
    assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT"
