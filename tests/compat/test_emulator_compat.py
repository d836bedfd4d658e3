"""The same raw HTTP requests against Google's Pub/Sub emulator and against Metro, compared.

Compared: HTTP status codes, the Google error ``status`` strings, and the shape of every JSON
answer (the set of keys, recursively, and the JSON type of each value). Messages, ids, ack ids
and page tokens are each server's own and are not compared.

Every known difference is listed below with its reason. Where the emulator and Google differ,
Metro follows Google's documented behaviour; a difference that is not listed fails the test.
Not covered: an UpdateX or CreateX whose body names another resource than its URL, which the
emulator (as of Cloud SDK 528) never answers.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import time
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from tests.compat.cases import DIFFERENT_CASES, KNOWN_DIFFERENCES, METRO_ADDS, SAME_CASES
from tests.compat.conftest import PROJECT, Emulator
from tests.stack import RunningStack

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(shutil.which("gcloud") is None,
                       reason="gcloud is not installed: the compatibility tests need `gcloud beta emulators pubsub`"),
]

P = f"/v1/projects/{PROJECT}"
TIMEOUT = 20  # the emulator never answers a few malformed requests: fail, do not hang

# -- the harness --------------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def error_status(self) -> str | None:
        try:
            return str(self.json["error"]["status"])
        except (ValueError, KeyError, TypeError):
            return None


class Pair:
    """Sends each request to both servers."""

    def __init__(self, emulator: str, metro: str) -> None:
        self.bases = (emulator, metro)
        self.sessions = (requests.Session(), requests.Session())

    def one(self, which: int, method: str, path: str, body: Any = None, raw: str | None = None,
            params: dict[str, str] | None = None) -> Answer:
        kwargs: dict[str, Any] = {"params": params, "timeout": TIMEOUT}
        if raw is not None:
            kwargs.update(data=raw.encode(), headers={"Content-Type": "application/json"})
        elif body is not None:
            kwargs["json"] = body
        resp = self.sessions[which].request(method, self.bases[which] + path, **kwargs)
        return Answer(resp.status_code, resp.text)

    def both(self, method: str, path: str, body: Any = None, raw: str | None = None,
             params: dict[str, str] | None = None) -> tuple[Answer, Answer]:
        return (self.one(0, method, path, body, raw, params), self.one(1, method, path, body, raw, params))

    def same(self, method: str, path: str, body: Any = None, raw: str | None = None,
             params: dict[str, str] | None = None, allow: dict[str, str] | None = None) -> tuple[Any, Any]:
        """Send to both; assert the same status, error status and shape; return both JSON bodies."""
        emu, met = self.both(method, path, body, raw, params)
        context = f"{method} {path} {raw or body!r}\n emulator: {emu.status} {emu.text[:300]}\n" \
                  f" metro:    {met.status} {met.text[:300]}"
        assert emu.status == met.status, context
        assert met.status < 500, context
        if emu.status >= 400:
            assert emu.error_status == met.error_status, context
            assert set(met.json["error"]) >= {"code", "message", "status"}, context
            return emu.json, met.json
        check_shapes(emu.json, met.json, {**METRO_ADDS, **(allow or {})}, context)
        return emu.json, met.json


def shape(value: Any) -> Any:
    """Keys (recursively) and JSON types; a list is the union of its elements' shapes."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        kinds = set()
        for item in value:
            s = shape(item)
            if isinstance(s, dict):
                merged.update(s)
            else:
                kinds.add(s)
        return [merged] if merged else sorted(kinds)
    return type(value).__name__


def shape_diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}{k}" for k in set(a) ^ set(b)]
        for k in set(a) & set(b):
            out += shape_diff(a[k], b[k], f"{path}{k}.")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if a and b and isinstance(a[0], dict) and isinstance(b[0], dict):
            return shape_diff(a[0], b[0], f"{path}[].")
        return [] if not a or not b or a == b else [path.rstrip(".") or "<root>"]
    return [] if a == b else [path.rstrip(".") or "<root>"]


def check_shapes(emu: Any, met: Any, allow: dict[str, str], context: str) -> None:
    diffs = shape_diff(shape(emu), shape(met))
    unexplained = [d for d in diffs if d.rsplit(".", 1)[-1] not in allow]
    assert not unexplained, f"shapes differ at {unexplained}\n{context}"


_ids = itertools.count()


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}-{int(time.time() * 1000) % 100000}"


@pytest.fixture(scope="module")
def pair(emulator: Emulator, metro: RunningStack) -> Pair:
    return Pair(emulator.url, metro.url)


@pytest.fixture(scope="module")
def base(pair: Pair) -> dict[str, str]:
    """A topic and a subscription present on both servers."""
    topic, sub = new_id("base-topic"), new_id("base-sub")
    pair.same("PUT", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/subscriptions/{sub}", {"topic": f"projects/{PROJECT}/topics/{topic}"})
    return {"topic": topic, "sub": sub, "topic_name": f"projects/{PROJECT}/topics/{topic}",
            "sub_name": f"projects/{PROJECT}/subscriptions/{sub}"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pull_until(pair: Pair, which: int, sub: str, n: int, timeout: float = 15) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        ans = pair.one(which, "POST", f"{P}/subscriptions/{sub}:pull", {"maxMessages": n - len(got)})
        assert ans.status == 200, ans.text
        got += ans.json.get("receivedMessages", [])
        if len(got) < n and which == 0:
            time.sleep(0.1)  # the emulator answers at once
    assert len(got) == n, f"{'emulator' if which == 0 else 'metro'}: {len(got)} of {n} messages"
    return got


# -- single requests ----------------------------------------------------------------------------------

def _fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**names) if "{" in value else value
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    return value


@pytest.fixture(scope="module")
def other(pair: Pair) -> str:
    """A topic without subscriptions, to publish to without leaving messages behind."""
    topic = new_id("other")
    pair.same("PUT", f"{P}/topics/{topic}")
    return topic


@pytest.fixture(scope="module")
def empty(pair: Pair, base: dict[str, str]) -> str:
    """A subscription nothing is published to."""
    topic, sub = new_id("empty-topic"), new_id("empty-sub")
    pair.same("PUT", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/subscriptions/{sub}", {"topic": f"projects/{PROJECT}/topics/{topic}"})
    return sub


def _names(base: dict[str, str], other: str, empty: str) -> dict[str, str]:
    return {"topic": base["topic"], "sub": base["sub"], "new": new_id("new"), "missing": new_id("missing"),
            "other": other, "empty": empty}


@pytest.mark.parametrize(("case", "method", "path", "body", "raw"), SAME_CASES, ids=[c[0] for c in SAME_CASES])
def test_same_answer(pair: Pair, base: dict[str, str], other: str, empty: str, case: str, method: str, path: str,
                     body: Any, raw: str | None) -> None:
    names = _names(base, other, empty)
    body = _fill(body, {**names, "topic": base["topic_name"], "subname": base["sub_name"]})
    path = P + path.format(**names)
    pair.same(method, path.split("?")[0], body, raw, params=_query(path))


@pytest.mark.parametrize("body", [{"maxMessages": 10.7, "returnImmediately": True},
                                  {"maxMessages": 1, "returnImmediately": "x"}], ids=["fractional", "not a bool"])
def test_pull_refuses_wrongly_typed_fields(pair: Pair, empty: str, body: dict[str, Any]) -> None:
    pair.same("POST", f"{P}/subscriptions/{empty}:pull", body)


def _query(path: str) -> dict[str, str] | None:
    if "?" not in path:
        return None
    return dict(part.split("=", 1) for part in path.split("?", 1)[1].split("&"))


@pytest.mark.parametrize(("case", "method", "path", "body"), DIFFERENT_CASES, ids=[c[0] for c in DIFFERENT_CASES])
def test_known_difference(pair: Pair, base: dict[str, str], other: str, empty: str, case: str, method: str,
                          path: str, body: Any) -> None:
    emu_status, metro_status, reason = KNOWN_DIFFERENCES[case]
    names = _names(base, other, empty)
    body = _fill(body, {**names, "topic": base["topic_name"]})
    full = path if path.startswith("/v1/") else P + path.format(**names)
    emu, met = pair.both(method, full.split("?")[0], body, params=_query(full))
    assert (emu.status, met.status) == (emu_status, metro_status), \
        f"{case}: {reason}\n emulator: {emu.status} {emu.text[:300]}\n metro: {met.status} {met.text[:300]}"
    if met.status >= 400:
        assert met.error_status == {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}[met.status]


def test_every_known_difference_is_exercised() -> None:
    assert set(KNOWN_DIFFERENCES) == {c[0] for c in DIFFERENT_CASES}


def test_root_and_unknown_urls(pair: Pair) -> None:
    emu, met = pair.both("GET", "/")
    # Both answer 200; the emulator says "Ok", Metro names itself, its ports and its description (/docs).
    assert (emu.status, emu.text.strip()) == (200, "Ok")
    assert met.status == 200 and json.loads(met.text)["docs"] == "/docs"
    for method, path in (("GET", "/v1/nothing"), ("POST", f"{P}/topics/abcd:bogusVerb"),
                         ("GET", f"{P}/snapshotz/abcd")):
        emu, met = pair.both(method, path)
        # Both 404; the emulator's body is the text "Not Found", Metro's is a Google error.
        assert (emu.status, met.status) == (404, 404), path
        assert met.error_status == "NOT_FOUND"
    # GET on a custom verb: the emulator reads "abcd:bogusVerb" as a topic id (400); Metro finds no such
    # method (404, as Google does for an unknown custom method).
    emu, met = pair.both("GET", f"{P}/topics/abcd:bogusVerb")
    assert (emu.status, emu.error_status, met.status, met.error_status) == (400, "INVALID_ARGUMENT", 404,
                                                                            "NOT_FOUND")


# -- flows --------------------------------------------------------------------------------------------


def test_topic_lifecycle(pair: Pair) -> None:
    topic = new_id("life")
    created, _ = pair.same("PUT", f"{P}/topics/{topic}", {"labels": {"k": "v"}})
    assert created == {"name": f"projects/{PROJECT}/topics/{topic}", "labels": {"k": "v"}}
    pair.same("GET", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/topics/{topic}")  # ALREADY_EXISTS
    emu, met = pair.same("DELETE", f"{P}/topics/{topic}")
    assert emu == met == {}
    pair.same("GET", f"{P}/topics/{topic}")  # NOT_FOUND
    pair.same("DELETE", f"{P}/topics/{topic}")  # NOT_FOUND
    pair.same("PUT", f"{P}/topics/{topic}")  # the name can be used again


def test_subscription_lifecycle(pair: Pair) -> None:
    topic, sub = new_id("life-topic"), new_id("life-sub")
    topic_name = f"projects/{PROJECT}/topics/{topic}"
    pair.same("PUT", f"{P}/topics/{topic}")
    emu, met = pair.same("PUT", f"{P}/subscriptions/{sub}", {"topic": topic_name, "ackDeadlineSeconds": 15})
    assert emu["ackDeadlineSeconds"] == met["ackDeadlineSeconds"] == 15
    assert emu["messageRetentionDuration"] == met["messageRetentionDuration"] == "604800s"
    emu, met = pair.same("PATCH", f"{P}/subscriptions/{sub}", {
        "subscription": {"ackDeadlineSeconds": 45, "retainAckedMessages": True},
        "updateMask": "ackDeadlineSeconds,retainAckedMessages"})
    assert emu["ackDeadlineSeconds"] == met["ackDeadlineSeconds"] == 45
    emu, met = pair.same("GET", f"{P}/topics/{topic}/subscriptions")
    assert emu == met == {"subscriptions": [f"projects/{PROJECT}/subscriptions/{sub}"]}
    assert pair.same("DELETE", f"{P}/subscriptions/{sub}") == ({}, {})
    pair.same("GET", f"{P}/subscriptions/{sub}")  # NOT_FOUND
    pair.same("DELETE", f"{P}/subscriptions/{sub}")  # NOT_FOUND
    pair.same("POST", f"{P}/subscriptions/{sub}:pull", {"maxMessages": 1})  # NOT_FOUND
    emu, met = pair.same("GET", f"{P}/topics/{topic}/subscriptions")
    assert emu == met == {}


def test_list_pagination_shapes(pair: Pair) -> None:
    project = f"compat-list-{next(_ids)}"
    base = f"/v1/projects/{project}"
    topics = sorted(f"projects/{project}/topics/topic-{i}" for i in range(3))
    for name in topics:
        pair.same("PUT", f"/v1/{name}")
    subs = sorted(f"projects/{project}/subscriptions/sub-{i}" for i in range(3))
    for name in subs:
        pair.same("PUT", f"/v1/{name}", {"topic": topics[0]})

    for collection, key, expected in (("topics", "topics", topics), ("subscriptions", "subscriptions", subs),
                                      ("topics/topic-0/subscriptions", "subscriptions", subs)):
        emu, met = pair.same("GET", f"{base}/{collection}", params={"pageSize": "2"})
        assert len(emu[key]) == len(met[key]) == 2 and "nextPageToken" in emu and "nextPageToken" in met
        seen: list[list[Any]] = [[], []]
        for which, first in enumerate((emu, met)):
            page = first
            while True:
                seen[which] += [x if isinstance(x, str) else x["name"] for x in page.get(key, [])]
                if not page.get("nextPageToken"):
                    break
                ans = pair.one(which, "GET", f"{base}/{collection}",
                               params={"pageSize": "2", "pageToken": page["nextPageToken"]})
                assert ans.status == 200, ans.text
                page = ans.json
        assert sorted(seen[0]) == sorted(seen[1]) == expected, collection
        # A page that holds everything: no token on the emulator; Metro (reading DynamoDB pages) may still give
        # one when the page is exactly full, which Google's API allows (the next page is then empty).
        pair.same("GET", f"{base}/{collection}", params={"pageSize": "3"},
                  allow={"nextPageToken": "an exactly full last page may carry a token"})
        emu, met = pair.same("GET", f"{base}/{collection}", params={"pageSize": "100"})
        assert "nextPageToken" not in emu and "nextPageToken" not in met
    # An empty project lists as {} on both.
    assert pair.same("GET", f"/v1/projects/compat-empty-{next(_ids)}/topics") == ({}, {})


def test_deleted_topic_subscription_shape(pair: Pair) -> None:
    topic, sub = new_id("doomed"), new_id("orphan")
    pair.same("PUT", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/subscriptions/{sub}", {"topic": f"projects/{PROJECT}/topics/{topic}"})
    pair.same("DELETE", f"{P}/topics/{topic}")
    emu, met = pair.same("GET", f"{P}/subscriptions/{sub}")
    assert emu["topic"] == met["topic"] == "_deleted-topic_"
    listed_emu, listed_met = pair.same("GET", f"{P}/subscriptions", params={"pageSize": "1000"})
    for listing in (listed_emu, listed_met):
        [entry] = [s for s in listing["subscriptions"] if s["name"].endswith(f"/{sub}")]
        assert entry["topic"] == "_deleted-topic_"
    pair.same("POST", f"{P}/subscriptions/{sub}:pull", {"maxMessages": 1, "returnImmediately": True})
    pair.same("PUT", f"{P}/topics/{topic}")  # recreated: the subscription stays detached
    assert pair.same("GET", f"{P}/topics/{topic}/subscriptions") == ({}, {})
    emu, met = pair.same("GET", f"{P}/subscriptions/{sub}")
    assert emu["topic"] == met["topic"] == "_deleted-topic_"
    pair.same("DELETE", f"{P}/subscriptions/{sub}")


def test_publish_pull_ack_shapes(pair: Pair) -> None:
    topic, sub = new_id("flow-topic"), new_id("flow-sub")
    pair.same("PUT", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/subscriptions/{sub}", {"topic": f"projects/{PROJECT}/topics/{topic}"})
    messages = [{"data": b64(bytes(range(256))), "attributes": {"k": "v", "ü": "✓"}},
                {"attributes": {"only": "attributes"}},
                {"data": b64("unicode ✓ 🎉".encode())}]
    emu, met = pair.same("POST", f"{P}/topics/{topic}:publish", {"messages": messages})
    assert len(emu["messageIds"]) == len(met["messageIds"]) == 3
    pulled = [pull_until(pair, which, sub, 3) for which in (0, 1)]
    by_data = [{json.dumps(m["message"].get("attributes"), sort_keys=True) + m["message"].get("data", ""): m
                for m in received} for received in pulled]
    assert set(by_data[0]) == set(by_data[1])
    for key in by_data[0]:
        check_shapes(by_data[0][key], by_data[1][key], METRO_ADDS, f"received message {key[:60]}")
    for which, received in enumerate(pulled):
        times = [m["message"]["publishTime"] for m in received]
        assert all(t.endswith("Z") and "T" in t for t in times), times
        ids = [m["ackId"] for m in received]
        ans = pair.one(which, "POST", f"{P}/subscriptions/{sub}:modifyAckDeadline",
                       {"ackIds": ids[:1], "ackDeadlineSeconds": 30})
        assert (ans.status, ans.json) == (200, {}), ans.text
        ans = pair.one(which, "POST", f"{P}/subscriptions/{sub}:acknowledge", {"ackIds": ids})
        assert (ans.status, ans.json) == (200, {}), ans.text
        # Acknowledging again, or changing the deadline of an acknowledged message, is not an error.
        ans = pair.one(which, "POST", f"{P}/subscriptions/{sub}:acknowledge", {"ackIds": ids})
        assert (ans.status, ans.json) == (200, {}), ans.text
        ans = pair.one(which, "POST", f"{P}/subscriptions/{sub}:modifyAckDeadline",
                       {"ackIds": ids, "ackDeadlineSeconds": 0})
        assert (ans.status, ans.json) == (200, {}), ans.text
    assert pair.same("POST", f"{P}/subscriptions/{sub}:pull", {"maxMessages": 10, "returnImmediately": True}) == \
        ({}, {})


def test_ack_ids_of_another_subscription(pair: Pair) -> None:
    """Ack ids are opaque and differ in format, but both servers bind them to their subscription.

    (Ids that were valid for the subscription, even acknowledged or expired ones, are accepted
    silently by both: see test_publish_pull_ack_shapes.)
    """
    topic, sub_a, sub_b = new_id("ack-topic"), new_id("ack-a"), new_id("ack-b")
    topic_name = f"projects/{PROJECT}/topics/{topic}"
    pair.same("PUT", f"{P}/topics/{topic}")
    pair.same("PUT", f"{P}/subscriptions/{sub_a}", {"topic": topic_name})
    pair.same("PUT", f"{P}/subscriptions/{sub_b}", {"topic": topic_name})
    pair.same("POST", f"{P}/topics/{topic}:publish", {"messages": [{"data": "eA=="}]})
    for which in (0, 1):
        [msg] = pull_until(pair, which, sub_a, 1)
        for verb, extra in (("acknowledge", {}), ("modifyAckDeadline", {"ackDeadlineSeconds": 0})):
            ans = pair.one(which, "POST", f"{P}/subscriptions/{sub_b}:{verb}", {"ackIds": [msg["ackId"]], **extra})
            assert (ans.status, ans.error_status) == (400, "INVALID_ARGUMENT"), (which, verb, ans.text)
        ans = pair.one(which, "POST", f"{P}/subscriptions/{sub_a}:acknowledge", {"ackIds": [msg["ackId"]]})
        assert ans.status == 200, ans.text
