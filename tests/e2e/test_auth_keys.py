"""METRO_AUTH=keys end to end: a real local stack started with METRO_ADMIN_KEY, driven over HTTP with an
x-api-key (curl-like), google-cloud-pubsub with a bearer token over REST, and the discovery client with
developerKey. The right users publish, pull and acknowledge; the wrong ones get 403 PERMISSION_DENIED;
a refreshed or deleted user's token stops working within METRO_AUTH_CACHE_SECONDS."""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterator
from typing import Any

import googleapiclient.discovery
import googleapiclient.errors
import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials

from tests.e2e.polling import pull_until
from tests.stack import RunningStack, keys_mode_stack

pytestmark = pytest.mark.e2e

ADMIN_KEY = secrets.token_urlsafe(32)
CACHE_SECONDS = 1.0
PROJECT = "keys-project"
TOPIC = f"projects/{PROJECT}/topics/orders"
SUB = f"projects/{PROJECT}/subscriptions/orders-sub"


@pytest.fixture(scope="module")
def keys_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with keys_mode_stack(tmp_path_factory.mktemp("keys"), ADMIN_KEY,
                         METRO_AUTH_CACHE_SECONDS=str(CACHE_SECONDS)) as running:
        yield running


def call(stack: RunningStack, method: str, path: str, token: str | None, body: Any = None) -> requests.Response:
    headers = {"x-api-key": token} if token is not None else {}
    resp = requests.request(method, stack.url + path, json=body, headers=headers, timeout=30)
    assert resp.status_code < 500, resp.text
    return resp


def ok(stack: RunningStack, method: str, path: str, body: Any = None, token: str = ADMIN_KEY) -> Any:
    resp = call(stack, method, path, token, body)
    assert resp.status_code == 200, (method, path, resp.text)
    return resp.json() if resp.content else {}


def denied(resp: requests.Response, status: int = 403, code: str = "PERMISSION_DENIED") -> None:
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["status"] == code


@pytest.fixture(scope="module")
def tokens(keys_stack: RunningStack) -> dict[str, str]:
    """A project with a project admin, a publisher and a consumer, a topic and a subscription with ACLs."""
    ok(keys_stack, "POST", f"/v1/projects/{PROJECT}", {"description": "keys e2e"})
    made = {}
    for name, role in (("boss", "project_admin"), ("pub", "publisher"), ("con", "consumer")):
        user = ok(keys_stack, "POST", f"/v1/users/{name}", {"projects": [{"project": PROJECT, "roles": [role]}],
                                                            "email": f"{name}@example.com"})
        made[name] = user["token"]
    boss = made["boss"]
    ok(keys_stack, "PUT", f"/v1/{TOPIC}", {}, boss)
    ok(keys_stack, "PUT", f"/v1/{SUB}", {"topic": TOPIC}, boss)
    ok(keys_stack, "POST", f"/v1/{TOPIC}:modifyAcl", {"authorized_users": ["pub"]}, boss)
    policy = ok(keys_stack, "GET", f"/v1/{SUB}:getIamPolicy", None, boss)
    ok(keys_stack, "POST", f"/v1/{SUB}:setIamPolicy", {"policy": {"etag": policy["etag"], "bindings": [
        {"role": "roles/pubsub.subscriber", "members": ["user:con"]}]}}, boss)
    return made


def test_tokens_are_required_except_on_the_public_routes(keys_stack: RunningStack,
                                                        tokens: dict[str, str]) -> None:
    denied(call(keys_stack, "GET", f"/v1/{TOPIC}", None), 401, "UNAUTHENTICATED")
    denied(call(keys_stack, "GET", f"/v1/{TOPIC}", "not-a-token"), 401, "UNAUTHENTICATED")
    assert call(keys_stack, "GET", "/", None).status_code == 200
    assert call(keys_stack, "GET", "/v1/jwks", None).status_code == 200
    assert ok(keys_stack, "GET", "/v1/users/profile", token=tokens["pub"])["name"] == "pub"
    assert ok(keys_stack, "GET", f"/v1/{TOPIC}:acl", token=tokens["boss"]) == {"authorized_users": ["pub"]}
    # no existence oracle: another project's resources answer 403 whether they exist or not
    denied(call(keys_stack, "GET", "/v1/projects/elsewhere/topics/orders", tokens["boss"]))
    denied(call(keys_stack, "GET", f"/v1/projects/{PROJECT}/topics/no-such-topic:acl", tokens["pub"]))


def client_options(stack: RunningStack) -> dict[str, str]:
    return {"api_endpoint": stack.url}


def test_google_client_with_bearer_tokens(keys_stack: RunningStack, tokens: dict[str, str]) -> None:
    options = client_options(keys_stack)
    publisher = pubsub_v1.PublisherClient(transport="rest", client_options=options,
                                          credentials=Credentials(tokens["pub"]))
    message_id = publisher.publish(TOPIC, b"by the publisher").result(timeout=30)
    wrong = pubsub_v1.PublisherClient(transport="rest", client_options=options,
                                      credentials=Credentials(tokens["con"]))
    with pytest.raises(gexc.Forbidden):
        wrong.publish(TOPIC, b"by the consumer").result(timeout=30)

    consumer = pubsub_v1.SubscriberClient(transport="rest", client_options=options,
                                          credentials=Credentials(tokens["con"]))
    received = pull_until(lambda: list(consumer.pull(subscription=SUB, max_messages=10).received_messages), 1)
    assert [m.message.message_id for m in received] == [message_id]
    not_consumer = pubsub_v1.SubscriberClient(transport="rest", client_options=options,
                                              credentials=Credentials(tokens["pub"]))
    with pytest.raises(gexc.Forbidden):
        not_consumer.acknowledge(subscription=SUB, ack_ids=[received[0].ack_id])
    consumer.acknowledge(subscription=SUB, ack_ids=[received[0].ack_id])


def test_discovery_client_with_developer_key(keys_stack: RunningStack, tokens: dict[str, str]) -> None:
    def pubsub(token: str) -> Any:
        return googleapiclient.discovery.build("pubsub", "v1", static_discovery=True, developerKey=token,
                                               credentials=AnonymousCredentials(), cache_discovery=False,
                                               client_options=client_options(keys_stack))

    body = {"messages": [{"data": base64.b64encode(b"via discovery").decode()}]}
    ids = pubsub(tokens["pub"]).projects().topics().publish(topic=TOPIC, body=body).execute()["messageIds"]
    with pytest.raises(googleapiclient.errors.HttpError) as err:
        pubsub(tokens["con"]).projects().topics().publish(topic=TOPIC, body=body).execute()
    assert err.value.resp.status == 403
    subs = pubsub(tokens["con"]).projects().subscriptions()
    received = pull_until(lambda: subs.pull(subscription=SUB, body={"maxMessages": 10}).execute().get(
        "receivedMessages", []), 1)
    assert [m["message"]["messageId"] for m in received] == ids
    subs.acknowledge(subscription=SUB, body={"ackIds": [received[0]["ackId"]]}).execute()


def await_status(stack: RunningStack, token: str, status: int) -> float:
    """Poll (bounded by the cache bound plus a margin) until ``token`` gets ``status``; the seconds it took."""
    start = time.monotonic()
    deadline = start + CACHE_SECONDS + 10
    while time.monotonic() < deadline:
        if call(stack, "GET", "/v1/users/profile", token).status_code == status:
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"the token did not get {status} within {CACHE_SECONDS + 10} s")


def test_refresh_and_deletion_take_effect_within_the_bound(keys_stack: RunningStack,
                                                           tokens: dict[str, str]) -> None:
    made = ok(keys_stack, "POST", "/v1/users/temp", {"projects": [{"project": PROJECT, "roles": ["consumer"]}]})
    old = made["token"]
    assert ok(keys_stack, "GET", "/v1/users/profile", token=old)["name"] == "temp"  # positive control
    new = ok(keys_stack, "POST", "/v1/users/temp:refreshToken", {})["token"]
    assert new != old
    await_status(keys_stack, old, 401)
    assert ok(keys_stack, "GET", "/v1/users/profile", token=new)["name"] == "temp"
    ok(keys_stack, "DELETE", "/v1/users/temp")
    await_status(keys_stack, new, 401)


def test_google_iam_methods_view_the_acls(keys_stack: RunningStack, tokens: dict[str, str]) -> None:
    boss = pubsub_v1.PublisherClient(transport="rest", client_options=client_options(keys_stack),
                                     credentials=Credentials(tokens["boss"]))
    policy = boss.get_iam_policy(request={"resource": TOPIC})
    assert [(b.role, list(b.members)) for b in policy.bindings] == [("roles/pubsub.publisher", ["user:pub"])]
    policy.bindings[0].members.append("user:con")
    changed = boss.set_iam_policy(request={"resource": TOPIC, "policy": policy})
    assert sorted(changed.bindings[0].members) == ["user:con", "user:pub"]
    assert ok(keys_stack, "GET", f"/v1/{TOPIC}:acl", token=tokens["boss"]) == {"authorized_users": ["con", "pub"]}
    with pytest.raises(gexc.GoogleAPICallError):  # the etag of the policy before the change is stale now
        boss.set_iam_policy(request={"resource": TOPIC, "policy": policy})
    asked = ["pubsub.topics.publish", "pubsub.topics.delete"]
    for who, holds in (("pub", ["pubsub.topics.publish"]), ("con", [])):  # con is on the ACL, not a publisher
        client = pubsub_v1.PublisherClient(transport="rest", client_options=client_options(keys_stack),
                                           credentials=Credentials(tokens[who]))
        held = client.test_iam_permissions(request={"resource": TOPIC, "permissions": asked})
        assert list(held.permissions) == holds, who
    ok(keys_stack, "POST", f"/v1/{TOPIC}:modifyAcl", {"authorized_users": ["pub"]}, tokens["boss"])


ELSEWHERE = "keys-elsewhere"
AVRO = '{"type": "record", "name": "Row", "fields": [{"name": "a", "type": "string"}]}'


@pytest.fixture(scope="module")
def elsewhere(keys_stack: RunningStack) -> dict[str, str]:
    """Another project's topic, subscription, snapshot and schema, made by the service admin."""
    ok(keys_stack, "POST", f"/v1/projects/{ELSEWHERE}", {"description": "another tenant"})
    names = {kind: f"projects/{ELSEWHERE}/{kind}/theirs" for kind in ("topics", "subscriptions", "snapshots",
                                                                       "schemas")}
    ok(keys_stack, "PUT", f"/v1/{names['topics']}", {})
    ok(keys_stack, "PUT", f"/v1/{names['subscriptions']}", {"topic": names["topics"]})
    ok(keys_stack, "PUT", f"/v1/{names['snapshots']}", {"subscription": names["subscriptions"]})
    ok(keys_stack, "POST", f"/v1/projects/{ELSEWHERE}/schemas?schemaId=theirs", {"type": "AVRO", "definition": AVRO})
    return names


def test_a_project_admin_cannot_name_another_projects_resources(keys_stack: RunningStack, tokens: dict[str, str],
                                                                 elsewhere: dict[str, str]) -> None:
    """google-cloud-pubsub over REST as keys-project's admin: every body that names keys-elsewhere's topic,
    snapshot or schema is 403, the same whether it exists or not; naming its own resources works."""
    options, boss = client_options(keys_stack), Credentials(tokens["boss"])
    subscriber = pubsub_v1.SubscriberClient(transport="rest", client_options=options, credentials=boss)
    publisher = pubsub_v1.PublisherClient(transport="rest", client_options=options, credentials=boss)
    schemas = pubsub_v1.SchemaServiceClient(transport="rest", client_options=options, credentials=boss)
    mine = f"projects/{PROJECT}/subscriptions/mine-"
    for ghost in (False, True):
        def other(kind: str, ghost: bool = ghost) -> str:
            return elsewhere[kind].replace("/theirs", "/no-such") if ghost else elsewhere[kind]

        with pytest.raises(gexc.Forbidden):
            subscriber.create_subscription(name=mine + "a", topic=other("topics"))
        with pytest.raises(gexc.Forbidden):
            subscriber.create_subscription(request={"name": mine + "b", "topic": TOPIC, "dead_letter_policy": {
                "dead_letter_topic": other("topics"), "max_delivery_attempts": 5}})
        with pytest.raises(gexc.Forbidden):
            subscriber.seek(request={"subscription": SUB, "snapshot": other("snapshots")})
        with pytest.raises(gexc.Forbidden):
            publisher.create_topic(request={"name": f"projects/{PROJECT}/topics/typed", "schema_settings": {
                "schema": other("schemas"), "encoding": "JSON"}})
        with pytest.raises(gexc.Forbidden):
            schemas.validate_message(request={"parent": f"projects/{PROJECT}", "name": other("schemas"),
                                              "message": b'{"a": "x"}', "encoding": "JSON"})
    with pytest.raises(gexc.Forbidden):  # nor read the other project's messages through a subscription
        subscriber.pull(subscription=elsewhere["subscriptions"], max_messages=1)
    made = subscriber.create_subscription(name=mine + "c", topic=TOPIC)  # positive control: its own topic
    assert made.topic == TOPIC


def test_keys_mode_applies_the_strict_push_rules(keys_stack: RunningStack) -> None:
    """Without METRO_PUSH_STRICT, keys mode refuses what the deployed rules refuse: plain http, loopback, and
    (whatever the rules) the emulator's reset route."""
    ok(keys_stack, "PUT", "/v1/projects/keys-project/topics/push-rules", {})
    for index, url in enumerate(("http://127.0.0.1:9/hook", "https://127.0.0.1:9/hook",
                                 f"{keys_stack.emulator_url}/moto-api/reset")):
        resp = call(keys_stack, "PUT", f"/v1/projects/keys-project/subscriptions/push-rules-{index}", ADMIN_KEY,
                    {"topic": "projects/keys-project/topics/push-rules", "pushConfig": {"pushEndpoint": url}})
        denied(resp, 400, "INVALID_ARGUMENT")
