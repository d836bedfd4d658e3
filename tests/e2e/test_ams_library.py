"""argo-ams-library 1.0.0, unchanged, against the AMS dialect's local HTTPS endpoint in keys mode (one stack
for the module): the library's own helpers create topics and subscriptions; publish, pull and acknowledge as
the right users and 403 for the wrong ones; ACLs; push with endpoint verification, linear retry, the
generated authorization header and AMS's batch body; metrics; and a topic shared with a Google client."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from argo_ams_library import AmsMessage, AmsServiceException, ArgoMessagingService
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials

from tests.e2e.polling import pull_until
from tests.stack import RunningStack, start_stack

pytestmark = pytest.mark.e2e

ADMIN_KEY = "ams-e2e-admin-key-0123456789abcdefghijklmnopq"
PROJECT = "ams-e2e"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    # Keys mode brings the strict push rules (https, public addresses); this stack's webhooks are plain http on
    # 127.0.0.1, so it opts out explicitly. Metro's own ports and the emulator's stay refused all the same.
    env = {"METRO_AUTH": "keys", "METRO_ADMIN_KEY": ADMIN_KEY, "METRO_PUSH_REFRESH_SECONDS": "0.2",
           "METRO_PUSH_STRICT": "0",
           "METRO_COUNTER_FLUSH_SECONDS": "0"}  # live counters written at once, so they can be read back
    running = start_stack(tmp_path_factory.mktemp("ams") / "metro.log", env)
    yield running
    running.stop()


@dataclass
class Ams:
    """Library clients of one project, one per user, all verifying the stack's certificate."""

    stack: RunningStack
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, who: str) -> ArgoMessagingService:
        return ArgoMessagingService(endpoint=self.stack.ams_host, token=self.tokens[who], project=PROJECT)

    @property
    def verify(self) -> dict[str, Any]:
        return {"verify": self.stack.ams_cert}

    def call(self, method: str, path: str, who: str = "admin", body: Any = None) -> requests.Response:
        return requests.request(method, f"https://{self.stack.ams_host}{path}", data=json.dumps(body or {}),
                                headers={"x-api-key": self.tokens[who]}, verify=self.stack.ams_cert, timeout=30)


@pytest.fixture(scope="module")
def ams(stack: RunningStack) -> Ams:
    """The project and its users, made with the library: project_admin 'boss', publisher 'pub', consumer 'con'."""
    made = Ams(stack, {"admin": ADMIN_KEY})
    admin = made.client("admin")
    admin.create_project(PROJECT, "argo-ams-library end to end", **made.verify)
    for user, role in (("boss", "project_admin"), ("pub", "publisher"), ("con", "consumer"),
                       ("pub2", "publisher")):
        made.tokens[user] = admin.create_project_member(user, PROJECT, [role], **made.verify).token
    return made


def denied(call: Callable[[], Any], code: int = 403) -> None:
    with pytest.raises(AmsServiceException) as caught:
        call()
    assert caught.value.code == code


def test_the_library_publishes_pulls_and_acknowledges_as_the_right_users(ams: Ams) -> None:
    v = ams.verify
    boss, pub, con, pub2 = (ams.client(u) for u in ("boss", "pub", "con", "pub2"))
    topic = boss.topic("lib-topic", **v)  # the library's helper: has_topic, then create_topic
    assert (topic.fullname, topic.name) == (f"/projects/{PROJECT}/topics/lib-topic", "lib-topic")
    assert boss.topic("lib-topic", **v).fullname == topic.fullname  # again: found, not created
    sub = topic.subscription("lib-sub", **v)
    assert (sub.fullname, sub.topic.name, sub.ackdeadline) == (f"/projects/{PROJECT}/subscriptions/lib-sub",
                                                               "lib-topic", 10)
    assert topic.acl(["pub"], **v) and sub.acl(["con"], **v)
    assert boss.getacl_topic("lib-topic", **v) == {"authorized_users": ["pub"]}
    assert boss.getacl_sub("lib-sub", **v) == {"authorized_users": ["con"]}

    ids = pub.publish("lib-topic", [AmsMessage(data="hello", attributes={"k": "v"}), AmsMessage(data="world")], **v)
    assert len(ids["messageIds"]) == 2
    got = pull_until(lambda: con.pull_sub("lib-sub", num=5, return_immediately=True, **v), 2)
    assert sorted(m.get_data() for _, m in got) == [b"hello", b"world"]
    assert {m.get_msgid() for _, m in got} == set(ids["messageIds"])
    assert all(m.get_publishtime() for _, m in got)
    assert con.ack_sub("lib-sub", [ack for ack, _ in got], **v)
    assert con.pull_sub("lib-sub", num=5, return_immediately=True, **v) == []

    denied(lambda: con.publish("lib-topic", [AmsMessage(data="x")], **v))  # a consumer never publishes
    denied(lambda: pub2.publish("lib-topic", [AmsMessage(data="x")], **v))  # a publisher not in the ACL
    denied(lambda: pub.pull_sub("lib-sub", num=1, return_immediately=True, **v))  # a publisher never pulls
    denied(lambda: pub.modifyacl_topic("lib-topic", ["pub2"], **v))  # ACLs are the project_admin's
    denied(lambda: ArgoMessagingService(endpoint=ams.stack.ams_host, token="not-a-token", project=PROJECT)
           .get_topic("lib-topic", **v), 401)
    answer = ams.call("GET", f"/v1/projects/{PROJECT}/topics/lib-topic", "con")
    assert answer.json() == {"error": {"code": 403, "message": answer.json()["error"]["message"],
                                       "status": "FORBIDDEN"}}


def test_lists_and_subscription_settings_in_ams_shapes(ams: Ams) -> None:
    v = ams.verify
    boss = ams.client("boss")
    boss.create_topic("shape-topic", **v)
    boss.create_sub("shape-sub", "shape-topic", ackdeadline=30, **v)
    topics = boss.list_topics(**v)
    assert {"name": f"/projects/{PROJECT}/topics/shape-topic"} in topics["topics"]
    subs = {s.name: s for s in boss.iter_subs(topic="shape-topic", **v)}
    assert subs["shape-sub"].ackdeadline == 30 and subs["shape-sub"].push_endpoint == ""
    listed = ams.call("GET", f"/v1/projects/{PROJECT}/topics/shape-topic/subscriptions", "boss").json()
    assert listed["subscriptions"] == [f"/projects/{PROJECT}/subscriptions/shape-sub"]
    # AMS's :modifyAckDeadline without ack ids sets the subscription's deadline; string numbers are read
    assert ams.call("POST", f"/v1/projects/{PROJECT}/subscriptions/shape-sub:modifyAckDeadline", "boss",
                    {"ackDeadlineSeconds": "45"}).status_code == 200
    assert boss.get_sub("shape-sub", **v)["ackDeadlineSeconds"] == 45
    bad = ams.call("PUT", f"/v1/projects/{PROJECT}/subscriptions/shape-bad", "boss",
                   {"topic": f"projects/{PROJECT}/topics/shape-topic", "pushConfig": {"retryPolicy": "x",
                                                                                     "pushEndpoint": "http://a/"}})
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"


# -- push ---------------------------------------------------------------------------------------------------
@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class Hook(ThreadingHTTPServer):
    """A push endpoint: serves a verification hash, records POSTs, answers them from a script."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _HookHandler)
        self.verification_hash = ""
        self.answers: list[int] = []  # statuses for the next POSTs, then 204
        self.posts: list[Received] = []
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/receive_here"

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.posts) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.posts)


class _HookHandler(BaseHTTPRequestHandler):
    server: Hook

    def do_GET(self) -> None:
        found = self.path == "/ams_verification_hash"
        self._reply(200 if found else 404, self.server.verification_hash.encode() if found else b"")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        with self.server.lock:
            self.server.posts.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = self.server.answers.pop(0) if self.server.answers else 204
        self._reply(status, b"")

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "plain/text")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook()
    yield server
    server.shutdown()
    server.server_close()


def test_push_with_verification_linear_retry_and_the_generated_authorization(ams: Ams, hook: Hook) -> None:
    v = ams.verify
    boss, pub = ams.client("boss"), ams.client("pub")
    boss.create_topic("push-topic", **v)
    boss.modifyacl_topic("push-topic", ["pub"], **v)
    boss.create_sub("push-sub", "push-topic", push_endpoint=hook.url, retry_policy_type="linear",
                    retry_policy_period=1000, **v)
    config = boss.get_sub("push-sub", **v)["pushConfig"]
    assert (config["pushEndpoint"], config["retryPolicy"], config["verified"]) == (
        hook.url, {"type": "linear", "period": 1000}, False)
    path = f"/v1/projects/{PROJECT}/subscriptions/push-sub:verifyPushEndpoint"
    hook.verification_hash = "not-the-hash"
    assert ams.call("POST", path, "boss").status_code == 400  # the endpoint does not prove it is the owner
    hook.verification_hash = config["verificationHash"]
    assert ams.call("POST", path, "con").status_code == 403
    assert ams.call("POST", path, "boss").status_code == 200
    assert boss.get_sub("push-sub", **v)["pushConfig"]["verified"] is True

    hook.answers = [500]  # the first push fails: linear retry pushes it again after the period
    sent = pub.publish("push-topic", [AmsMessage(data="pushed")], **v)["messageIds"][0]
    first, second = hook.wait_for(2)[:2]
    for post in (first, second):
        assert post.body["message"]["messageId"] == sent and post.body["subscription"] == \
            f"projects/{PROJECT}/subscriptions/push-sub"
        assert post.headers["authorization"] == config["authorizationHeader"]["value"]
    assert config["authorizationHeader"]["type"] == "autogen" and len(config["authorizationHeader"]["value"]) >= 32


def test_push_with_max_messages_sends_the_ams_batch_body(ams: Ams, hook: Hook) -> None:
    v = ams.verify
    boss, pub = ams.client("boss"), ams.client("pub")
    boss.create_topic("batch-topic", **v)
    boss.modifyacl_topic("batch-topic", ["pub"], **v)
    push_config = {"type": "http_endpoint", "pushEndpoint": hook.url, "maxMessages": "5",
                   "authorizationHeader": {"type": "disabled"}, "retryPolicy": {"type": "slowstart"}}
    made = ams.call("PUT", f"/v1/projects/{PROJECT}/subscriptions/batch-sub", "boss",
                    {"topic": f"projects/{PROJECT}/topics/batch-topic", "pushConfig": push_config})
    assert made.status_code == 200, made.text
    assert made.json()["pushConfig"]["maxMessages"] == 5
    sent = pub.publish("batch-topic", [AmsMessage(data=f"m{i}") for i in range(3)], **v)["messageIds"]
    deadline = time.monotonic() + 30
    pushed: list[str] = []
    while len(pushed) < 3 and time.monotonic() < deadline:
        posts = hook.wait_for(1)
        pushed = [m["message"]["messageId"] for post in posts for m in post.body["messages"]]
    assert sorted(pushed) == sorted(sent)
    assert all(set(post.body) == {"messages"} and "authorization" not in post.headers for post in hook.posts)


def test_the_opt_out_still_refuses_the_emulator_and_metros_own_ports(ams: Ams) -> None:
    """The emulator's ``/moto-api/reset`` as a push endpoint wiped every tenant's data."""
    ams.client("boss").create_topic("own-topic", **ams.verify)
    stack = ams.stack
    for index, url in enumerate((f"{stack.emulator_url}/moto-api/reset", f"{stack.url}/v1/projects",
                                 f"https://{stack.ams_host}/v1/projects")):
        made = ams.call("PUT", f"/v1/projects/{PROJECT}/subscriptions/own-{index}", "boss",
                        {"topic": f"projects/{PROJECT}/topics/own-topic",
                         "pushConfig": {"type": "http_endpoint", "pushEndpoint": url,
                                        "retryPolicy": {"type": "linear", "period": 1000}}})
        assert made.status_code == 400 and "may never use it" in made.text, (url, made.text)


# -- metrics and the operational routes -----------------------------------------------------------------------
def test_metrics_and_operational_routes(ams: Ams) -> None:
    v = ams.verify
    boss = ams.client("boss")
    boss.create_topic("metrics-topic", **v)
    boss.create_sub("metrics-sub", "metrics-topic", **v)
    boss.publish("metrics-topic", [AmsMessage(data="counted"), AmsMessage(data="twice")], **v)
    got = pull_until(lambda: boss.pull_sub("metrics-sub", num=1, return_immediately=True, **v), 1)
    boss.ack_sub("metrics-sub", [got[0][0]], **v)

    def metric(path: str, name: str) -> Any:
        found = ams.call("GET", path, "boss").json()["metrics"]
        return next(m for m in found if m["metric"] == name)

    def value(path: str, name: str) -> Any:
        return metric(path, name)["timeseries"][0]["value"]

    sub_path = f"/v1/projects/{PROJECT}/subscriptions/metrics-sub:metrics"
    assert metric(sub_path, "subscription.number_of_undelivered_messages")["resource_name"] == "metrics-sub"
    assert value(sub_path, "subscription.number_of_delivered_messages") == 1
    assert value(sub_path, "subscription.number_of_acknowledged_messages") == 1
    assert (value(sub_path, "subscription.number_of_waiting_messages")
            + value(sub_path, "subscription.number_of_inflight_messages")) == 1
    assert metric(sub_path, "subscription.consumption_rate")["value_type"] == "float64"
    topic_path = f"/v1/projects/{PROJECT}/topics/metrics-topic:metrics"
    assert value(topic_path, "topic.number_of_subscriptions") == 1
    assert value(topic_path, "topic.number_of_published_messages") == 2
    assert value(topic_path, "topic.number_of_published_bytes") == len("counted") + len("twice")
    assert value(f"/v1/projects/{PROJECT}:metrics", "project.number_of_users") == 4
    assert metric(f"/v1/projects/{PROJECT}:metrics", "project.number_of_topics")["timeseries"][0]["value"] >= 1
    admin = ams.client("admin")
    service = {m["metric"]: m["timeseries"][0]["value"] for m in admin.metrics(**v)["metrics"]}
    assert service["ams.number_of_projects"] >= 1 and service["ams.number_of_users"] >= 4
    denied(lambda: boss.metrics(**v))  # the service's metrics are the service admin's
    assert boss.status(**v)["status"] == "ok"
    assert boss.version(**v)["release"]


# -- both dialects, one topic ---------------------------------------------------------------------------------
def test_a_google_client_and_the_ams_library_share_a_topic(ams: Ams) -> None:
    v = ams.verify
    boss = ams.client("boss")
    boss.create_topic("shared-topic", **v)
    boss.create_sub("shared-ams-sub", "shared-topic", **v)
    options = {"api_endpoint": ams.stack.url}
    google = pubsub_v1.PublisherClient(transport="rest", client_options=options,
                                       credentials=Credentials(ams.tokens["boss"]))
    google_sub = pubsub_v1.SubscriberClient(transport="rest", client_options=options,
                                            credentials=Credentials(ams.tokens["boss"]))
    topic_path = f"projects/{PROJECT}/topics/shared-topic"
    google_sub.create_subscription(name=f"projects/{PROJECT}/subscriptions/shared-google-sub", topic=topic_path)
    from_google = google.publish(topic_path, b"from google", origin="google").result(timeout=30)
    from_ams = boss.publish("shared-topic", [AmsMessage(data="from ams", attributes={"origin": "ams"})],
                            **v)["messageIds"][0]
    got = pull_until(lambda: boss.pull_sub("shared-ams-sub", num=10, return_immediately=True, **v), 2)
    assert {(m.get_msgid(), m.get_data()) for _, m in got} == {(from_google, b"from google"),
                                                               (from_ams, b"from ams")}
    pulled = pull_until(lambda: list(google_sub.pull(subscription=f"projects/{PROJECT}/subscriptions/"
                                                     "shared-google-sub", max_messages=10,
                                                     return_immediately=True).received_messages), 2)
    assert {(m.message.message_id, m.message.attributes["origin"]) for m in pulled} == {
        (from_google, "google"), (from_ams, "ams")}


def test_the_certificate_is_the_one_printed(ams: Ams) -> None:
    printed = [line for line in ams.stack.log_path.read_text().splitlines() if line.startswith("Metro AMS dialect on")]
    assert printed == [f"Metro AMS dialect on https://{ams.stack.ams_host} (certificate: {ams.stack.ams_cert})"]
    assert Path(ams.stack.ams_cert).read_text().startswith("-----BEGIN CERTIFICATE-----")
    with pytest.raises(requests.exceptions.SSLError):  # self-signed: without verify= the client refuses it
        requests.get(f"https://{ams.stack.ams_host}/v1/status", timeout=10)


# -- offsets --------------------------------------------------------------------------------------------------
def test_offsets_time_to_offset_and_modify_offset_replay_acknowledged_messages(ams: Ams) -> None:
    v = ams.verify
    boss, pub, con = ams.client("boss"), ams.client("pub"), ams.client("con")
    topic = boss.topic("offset-topic", **v)
    sub = topic.subscription("offset-sub", **v)
    topic.acl(["pub"], **v)
    sub.acl(["con"], **v)
    empty = sub.offsets(**v)
    assert empty["min"] <= empty["current"] == empty["max"]

    sent = [pub.publish("offset-topic", [AmsMessage(data=f"m{i}")], **v)["messageIds"][0] for i in range(3)]
    got = pull_until(lambda: con.pull_sub("offset-sub", num=10, return_immediately=True, **v), 3)
    assert sorted(m.get_msgid() for _, m in got) == sorted(sent)
    con.ack_sub("offset-sub", [ack for ack, _ in got], **v)
    published_ms = [int(mid[:13]) for mid in sent]  # a Metro offset is a publish time in ms
    after = sub.offsets(**v)
    assert after["max"] == published_ms[-1] + 1 and after["current"] == after["max"]

    second = datetime.datetime.fromtimestamp(published_ms[1] / 1000, tz=datetime.timezone.utc).replace(tzinfo=None)
    offset = con.time_to_offset_sub("offset-sub", second, **v)
    assert offset == published_ms[1]
    moved = sub.offsets(move_to=offset, **v)  # the library's :modifyOffset, then :offsets
    assert moved["current"] == offset and moved["max"] == after["max"]
    again = pull_until(lambda: con.pull_sub("offset-sub", num=10, return_immediately=True, **v), 2)
    assert sorted(m.get_msgid() for _, m in again) == sorted(sent[1:])  # acknowledged, and delivered again

    denied(lambda: pub.getoffsets_sub("offset-sub", **v))  # offsets are the consumers'
    denied(lambda: pub.modifyoffset_sub("offset-sub", offset, **v))
    out_of_bounds = ams.call("POST", f"/v1/projects/{PROJECT}/subscriptions/offset-sub:modifyOffset", "con",
                             {"offset": after["max"] + 10**9})
    assert out_of_bounds.status_code == 400


# -- schemas --------------------------------------------------------------------------------------------------
def test_schema_routes_and_attach_check_what_the_library_publishes(ams: Ams) -> None:
    v = ams.verify
    boss, pub = ams.client("boss"), ams.client("pub")
    definition = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    path = f"/v1/projects/{PROJECT}/schemas/person"
    made = ams.call("POST", path, "boss", {"type": "json", "schema": definition})
    assert made.status_code == 200, made.text
    shown = made.json()
    assert (shown["name"], shown["type"], shown["schema"]) == (f"projects/{PROJECT}/schemas/person", "json",
                                                               definition)
    assert ams.call("GET", path, "pub").json() == shown
    assert ams.call("POST", path + ":validate", "pub", {"name": "ada"}).json() == {
        "message": "Message validated successfully"}
    assert ams.call("POST", path + ":validate", "pub", {"age": 3}).status_code == 400

    boss.create_topic("schema-topic", **v)
    boss.modifyacl_topic("schema-topic", ["pub"], **v)
    attach = f"/v1/projects/{PROJECT}/topics/schema-topic:attachSchema"
    assert ams.call("POST", attach, "pub", {"schema": f"projects/{PROJECT}/schemas/person"}).status_code == 403
    assert ams.call("POST", attach, "boss", {"schema": f"projects/{PROJECT}/schemas/person"}).status_code == 200
    assert boss.get_topic("schema-topic", **v)["schema"] == f"projects/{PROJECT}/schemas/person"
    assert pub.publish("schema-topic", [AmsMessage(data=json.dumps({"name": "ada"}))], **v)["messageIds"]
    denied(lambda: pub.publish("schema-topic", [AmsMessage(data=json.dumps({"age": 3}))], **v), 400)
    assert ams.call("POST", f"/v1/projects/{PROJECT}/topics/schema-topic:detachSchema", "boss").status_code == 200
    assert "schema" not in boss.get_topic("schema-topic", **v)
    assert pub.publish("schema-topic", [AmsMessage(data=json.dumps({"age": 3}))], **v)["messageIds"]


def test_another_projects_topic_and_schema_cannot_be_named(ams: Ams) -> None:
    """On the AMS endpoint, the project admin of ams-e2e names another project's topic (to subscribe to it) and
    schema (to attach it): 403 whether they exist or not. The library itself, for its own project, works."""
    other = "ams-elsewhere"
    admin = ams.client("admin")
    admin.create_project(other, "another tenant", **ams.verify)
    ArgoMessagingService(endpoint=ams.stack.ams_host, token=ADMIN_KEY, project=other).create_topic(
        "theirs", **ams.verify)
    assert ams.call("POST", f"/v1/projects/{other}/schemas/theirs", "admin", {
        "type": "json", "schema": {"type": "object"}}).status_code == 200
    boss = ams.client("boss")
    boss.create_topic("mine", **ams.verify)
    answers = []
    for name in ("theirs", "no-such"):
        made = ams.call("PUT", f"/v1/projects/{PROJECT}/subscriptions/cross-sub", "boss",
                        {"topic": f"/projects/{other}/topics/{name}"})
        attached = ams.call("POST", f"/v1/projects/{PROJECT}/topics/mine:attachSchema", "boss",
                            {"schema": f"projects/{other}/schemas/{name}"})
        answers.append([(made.status_code, made.json()), (attached.status_code, attached.json())])
    assert answers[0] == answers[1] and {status for status, _ in answers[0]} == {403}, answers
    sub = boss.create_sub("mine-sub", "mine", **ams.verify)  # positive control: the library in its own project
    assert sub["name"] == f"/projects/{PROJECT}/subscriptions/mine-sub", sub
