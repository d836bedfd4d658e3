"""Push delivery end to end: the local stack (publish -> fan-out -> push pump -> handler) to a real webhook.

The webhook runs in this test process (tests/webhooks.py); the stack is the shared
session stack (METRO_PULL_WAIT_SECONDS=2). Times are generous where the emulator sets the pace. Push rates
(backoff, recovery, flow control) are measured on a fake clock in tests/unit/test_push_flow.py.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1

from tests.stack import RunningStack, free_port
from tests.webhooks import Webhook

pytestmark = pytest.mark.e2e
PROJECT = "e2e-push"
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class Api:
    """The REST API of the stack, for one test's topic."""

    def __init__(self, stack: RunningStack, unique: str) -> None:
        self.base = f"{stack.url}/v1/projects/{PROJECT}"
        self.topic = f"projects/{PROJECT}/topics/push-{unique}"
        self.http = requests.Session()
        assert self.http.put(f"{stack.url}/v1/{self.topic}").status_code == 200

    def sub_path(self, name: str) -> str:
        return f"projects/{PROJECT}/subscriptions/{name}"

    def create(self, name: str, push: dict[str, Any] | None, **extra: Any) -> requests.Response:
        body: dict[str, Any] = {"topic": self.topic, **extra}
        if push is not None:
            body["pushConfig"] = push
        return self.http.put(f"{self.base}/subscriptions/{name}", json=body)

    def modify(self, name: str, push: dict[str, Any]) -> requests.Response:
        return self.http.post(f"{self.base}/subscriptions/{name}:modifyPushConfig", json={"pushConfig": push})

    def publish(self, *datas: bytes, attributes: dict[str, str] | None = None) -> list[str]:
        msgs = [{"data": base64.b64encode(d).decode(), **({"attributes": attributes} if attributes else {})}
                for d in datas]
        resp = self.http.post(f"{self.base}/topics/{self.topic.rsplit('/', 1)[1]}:publish", json={"messages": msgs})
        assert resp.status_code == 200, resp.text
        return list(resp.json()["messageIds"])

    def pull_and_ack(self, name: str) -> list[str]:
        resp = self.http.post(f"{self.base}/subscriptions/{name}:pull",
                              json={"maxMessages": 50, "returnImmediately": True})
        got = resp.json().get("receivedMessages", [])
        if got:
            self.http.post(f"{self.base}/subscriptions/{name}:acknowledge", json={"ackIds": [m["ackId"] for m in got]})
        return [m["message"]["messageId"] for m in got]


@pytest.fixture
def api(stack: RunningStack, unique: str) -> Api:
    return Api(stack, unique)


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    server = Webhook()
    yield server
    server.close()


@pytest.fixture(scope="module")
def subscriber(stack: RunningStack) -> Iterator[pubsub_v1.SubscriberClient]:
    mp = pytest.MonkeyPatch()
    mp.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    client = pubsub_v1.SubscriberClient(transport="rest", client_options={"api_endpoint": stack.url},
                                        credentials=AnonymousCredentials())
    yield client
    mp.undo()


def test_body_is_the_seed_format_byte_for_byte(api: Api, webhook: Webhook, unique: str,
                                               subscriber: pubsub_v1.SubscriberClient) -> None:
    hook = webhook.hook(204)
    name = api.sub_path(f"shape-{unique}")
    created = subscriber.create_subscription(request={"name": name, "topic": api.topic,
                                                      "push_config": {"push_endpoint": hook.url}})
    assert created.push_config.push_endpoint == hook.url
    ids = api.publish(b"Hello Cloud Pub/Sub! Here is my message!", attributes={"key": "value"})
    ids += api.publish(b"\x00\xff\xfe binary")
    got = {r.message_id: r for r in hook.wait_for(2, 15)}
    assert set(got) == set(ids)
    first = got[ids[0]]
    published = first.json()["message"]["publishTime"]
    assert RFC3339_MS.match(published)
    assert first.body == (
        b'{"message":{"data":"SGVsbG8gQ2xvdWQgUHViL1N1YiEgSGVyZSBpcyBteSBtZXNzYWdlIQ==","attributes":{"key":"value"},'
        b'"messageId":"' + ids[0].encode() + b'","message_id":"' + ids[0].encode() + b'",'
        b'"publishTime":"' + published.encode() + b'","publish_time":"' + published.encode() + b'"},'
        b'"subscription":"' + name.encode() + b'"}')
    second = got[ids[1]].json()["message"]
    assert base64.b64decode(second["data"]) == b"\x00\xff\xfe binary" and second["attributes"] == {}
    assert second["message_id"] == second["messageId"] and second["publish_time"] == second["publishTime"]
    assert first.headers["content-type"] == "application/json" and "authorization" not in first.headers
    hook.quiet_after(lambda: api.publish(b"marker")[0])
    assert sorted(hook.ids()[:2]) == sorted(ids) and len(hook.requests) == 3  # acked: never again


def test_ack_and_nack_statuses(api: Api, webhook: Webhook, unique: str) -> None:
    acks = {status: webhook.hook(status) for status in (102, 200, 201, 202, 204)}
    nacks = {status: webhook.hook(status) for status in (203, 302, 400, 429, 500)}
    for status, hook in {**acks, **nacks}.items():
        assert api.create(f"st{status}-{unique}", {"pushEndpoint": hook.url}).status_code == 200
    [mid] = api.publish(b"status check")
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if all(len(h.requests) >= 1 for h in acks.values()) and all(len(h.requests) >= 2 for h in nacks.values()):
            break
        time.sleep(0.05)
    # Nothing more for the acking hooks; the control: a marker published now reaches each of them.
    [marker] = api.publish(b"marker")
    for i, (status, hook) in enumerate(acks.items()):
        hook.quiet_after(lambda: marker, window=1.5 if i == 0 else 0.0)  # one window for all of them
        assert hook.ids() == [mid, marker], status
    for status, hook in nacks.items():  # redelivered (the marker reaches them too, and is nacked as well)
        assert hook.ids().count(mid) >= 2 and set(hook.ids()) <= {mid, marker}, status


def test_500_then_success_is_redelivered_once(api: Api, webhook: Webhook, unique: str) -> None:
    hook = webhook.hook(lambda i, r: 500 if i == 0 else 200)
    assert api.create(f"retry-{unique}", {"pushEndpoint": hook.url}).status_code == 200
    [mid] = api.publish(b"try again")
    first, second = hook.wait_for(2, 15)[:2]
    assert first.message_id == second.message_id == mid
    assert second.at - first.at >= 0.5  # the throttle's pause (and the visibility delay) in between
    hook.quiet_after(lambda: api.publish(b"marker")[0], window=1.5)
    assert hook.ids()[:2] == [mid, mid] and len(hook.requests) == 3  # the acked retry never came again


def test_dead_endpoint_gets_the_message_once_it_comes_up(api: Api, unique: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/late"
    assert api.create(f"dead-{unique}", {"pushEndpoint": url}).status_code == 200
    [mid] = api.publish(b"anyone there?")
    time.sleep(2.0)  # connection refused, a few times, with growing pauses
    late = Webhook(port)
    try:
        hook = late.hook(204, name="late")
        late.server.hooks["/late"] = hook
        got = hook.wait_for(1, 15)
        assert got and got[0].message_id == mid
    finally:
        late.close()


def test_switching_between_push_and_pull_loses_nothing(api: Api, webhook: Webhook, unique: str) -> None:
    hook = webhook.hook(204)
    name = f"switch-{unique}"
    assert api.create(name, {"pushEndpoint": hook.url}).status_code == 200
    published: list[str] = []
    pulled: list[str] = []
    mode = {"pull": False}
    switched, done, pulled_some = threading.Event(), threading.Event(), threading.Event()

    def publisher() -> None:
        i = 0
        while not switched.is_set():
            published.extend(api.publish(*(b"m%d-%d" % (i, j) for j in range(5))))
            i += 1
            time.sleep(0.1)
        done.set()

    def puller() -> None:
        http = Api.__new__(Api)
        http.__dict__.update(api.__dict__, http=requests.Session())
        while not done.is_set() or mode["pull"]:
            if mode["pull"]:
                got = http.pull_and_ack(name)
                pulled.extend(got)
                if got:
                    pulled_some.set()
            time.sleep(0.05)

    threads = [threading.Thread(target=publisher), threading.Thread(target=puller)]
    for t in threads:
        t.start()
    # Each phase lasts until its own way has delivered something new: a switch reaches a warm push handler
    # only when its copy of the subscription expires, so fixed-length phases may never see a pull at all.
    try:
        for switch_to_pull in (True, False, True, False):
            pushed_before = len(hook.requests)
            pulled_some.clear()
            resp = api.modify(name, {} if switch_to_pull else {"pushEndpoint": hook.url})
            assert resp.status_code == 200 and resp.json() == {}
            mode["pull"] = switch_to_pull
            if switch_to_pull:
                assert pulled_some.wait(20), "nothing delivered by pull"
            else:
                assert len(hook.wait_for(pushed_before + 1, 20)) > pushed_before, "nothing delivered by push"
    finally:
        switched.set()
    done.wait(30)
    threads[1].join(10)
    end = time.monotonic() + 30
    while time.monotonic() < end and not set(published) <= set(hook.ids()) | set(pulled):
        time.sleep(0.1)
    missing = set(published) - set(hook.ids()) - set(pulled)
    assert not missing, f"{len(missing)} of {len(published)} never delivered"
    assert pulled and hook.requests, "both ways were used"
    print(f"\nswitch test: {len(published)} published, {len(set(hook.ids()))} pushed, {len(set(pulled))} pulled, "
          f"{len(hook.ids()) + len(pulled) - len(published)} duplicates")


def test_oidc_token_verifies_against_the_jwks(api: Api, webhook: Webhook, unique: str, stack: RunningStack,
                                              subscriber: pubsub_v1.SubscriberClient) -> None:
    hook = webhook.hook(204)
    name = api.sub_path(f"auth-{unique}")
    subscriber.create_subscription(request={"name": name, "topic": api.topic, "push_config": {
        "push_endpoint": hook.url, "oidc_token": {"service_account_email": "pusher@metro.example",
                                                  "audience": "https://my-service.example"}}})
    api.publish(b"signed")
    [request] = hook.wait_for(1, 15)[:1]
    token = request.headers["authorization"].removeprefix("Bearer ")
    signing_key = jwt.PyJWKClient(f"{stack.url}/v1/jwks").get_signing_key_from_jwt(token)
    claims = jwt.decode(token, signing_key.key, algorithms=["RS256"], audience="https://my-service.example",
                        issuer=stack.url)
    assert claims["email"] == "pusher@metro.example" and claims["email_verified"] is True
    assert requests.get(f"{stack.url}/.well-known/jwks.json").json() == requests.get(f"{stack.url}/v1/jwks").json()
    # Without an audience, the token is for the endpoint URL.
    subscriber.modify_push_config(request={"subscription": name, "push_config": {
        "push_endpoint": hook.url, "oidc_token": {"service_account_email": "pusher@metro.example"}}})
    end = time.monotonic() + 15  # a warm handler trusts its copy of the subscription for a short while
    claims: dict[str, Any] = {}
    while time.monotonic() < end and claims.get("aud") != hook.url:
        [message_id] = api.publish(b"signed again")
        request = hook.wait_for_message(message_id, 15)  # it may be pushed before publish returns
        token = request.headers["authorization"].removeprefix("Bearer ")
        claims = jwt.decode(token, signing_key.key, algorithms=["RS256"], options={"verify_aud": False})
    assert claims["aud"] == hook.url and claims["sub"] == "pusher@metro.example"


def test_invalid_push_configs_are_refused(api: Api, unique: str) -> None:
    for endpoint in ("ftp://example.com/x", "http://169.254.169.254/latest/meta-data", "no url", "http://[ff02::1]/"):
        resp = api.create(f"bad-{unique}", {"pushEndpoint": endpoint})
        assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT", endpoint
    assert api.create(f"ok-{unique}", None).status_code == 200
    resp = api.modify(f"ok-{unique}", {"pushEndpoint": "http://224.0.0.1/x"})
    assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT"
    resp = api.http.patch(f"{api.base}/subscriptions/ok-{unique}", json={
        "subscription": {"pushConfig": {"pushEndpoint": "gopher://x"}}, "updateMask": "pushConfig"})
    assert resp.status_code == 400
    assert api.modify(f"missing-{unique}", {"pushEndpoint": "http://127.0.0.1:1/x"}).status_code == 404
    got = api.http.get(f"{api.base}/subscriptions/ok-{unique}").json()
    assert got["pushConfig"] == {}


def test_many_messages_are_all_pushed(api: Api, webhook: Webhook, unique: str) -> None:
    hook = webhook.hook(204)
    assert api.create(f"many-{unique}", {"pushEndpoint": hook.url}).status_code == 200
    start = time.monotonic()
    ids: list[str] = []
    for i in range(3):
        ids += api.publish(*(json.dumps({"n": i * 100 + j}).encode() for j in range(100)))
    hook.wait_for(len(ids), 60)
    elapsed = time.monotonic() - start
    assert set(hook.ids()) == set(ids)
    print(f"\npush throughput: {len(ids)} messages in {elapsed:.1f}s = {len(ids) / elapsed:.0f} msg/s "
          f"({len(hook.requests) - len(ids)} duplicates)")
