"""Push endpoint security against the real stack, with google-cloud-pubsub (``transport="rest"``).

- A stack with ``METRO_PUSH_STRICT=1`` (the deployed push rules) refuses every hostile endpoint with
  INVALID_ARGUMENT, at create and at modifyPushConfig, and refuses an oidcToken naming a service
  account outside ``METRO_PUSH_SERVICE_ACCOUNTS`` with PERMISSION_DENIED.
- The session stack (local rules) delivers a noWrapper/writeMetadata push whose attributes hold CR/LF
  once and sees it acknowledged; the unsafe attributes are left out of the headers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import pubsub_v1

from tests.stack import RunningStack, start_stack
from tests.webhooks import Webhook

pytestmark = pytest.mark.e2e
PROJECT = "e2e-push-security"
LISTED = "pusher@metro.example"
PUBLIC = "https://93.184.216.34/push"  # a public IP literal: accepted without DNS

HOSTILE = [
    "https://169.254.169.254\\@example.com/",  # urlsplit reads example.com, urllib3 connected to 169.254.169.254
    "https://example.com\\@169.254.169.254/",
    "https://user:pass@93.184.216.34/",
    "https://93.184.216.34@169.254.169.254/",
    "https://93.184.216.34/\r\nX-Injected: 1",
    "https://93.184.216.34/\t",
    "https://[::169.254.169.254]/",
    "https://[::ffff:0:a9fe:a9fe]/",
    "https://[::ffff:169.254.169.254]/",
    "https://[64:ff9b::a9fe:a9fe]/",
    "https://[64:ff9b:1::a9fe:a9fe]/",
    "https://[2002:a9fe:a9fe::1]/",
    "https://[2001::1]/",
    "https://198.18.0.1/",
    "https://192.0.0.1/",
    "https://169.254.169.254/latest/meta-data/",
    "https://127.0.0.1:8085/",
    "https://2130706433/",
    "https://0x7f.0.0.1/",
    "https://0177.0.0.1/",
    "http://93.184.216.34/push",  # plain http
]


@pytest.fixture(scope="module")
def strict_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("strict") / "metro.log",
                          extra_env={"METRO_PUSH_STRICT": "1", "METRO_PUSH_SERVICE_ACCOUNTS": LISTED})
    yield running
    running.stop()


def status_of(error: gexc.GoogleAPICallError) -> str:
    """The ``status`` of Google's error envelope (the REST client's exception class follows the HTTP code)."""
    assert error.response is not None
    return str(error.response.json()["error"]["status"])


def clients(stack: RunningStack) -> tuple[pubsub_v1.PublisherClient, pubsub_v1.SubscriberClient]:
    options = {"api_endpoint": stack.url}
    return (pubsub_v1.PublisherClient(transport="rest", client_options=options, credentials=AnonymousCredentials()),
            pubsub_v1.SubscriberClient(transport="rest", client_options=options, credentials=AnonymousCredentials()))


def test_strict_stack_refuses_hostile_endpoints_at_create_and_modify(strict_stack: RunningStack) -> None:
    publisher, subscriber = clients(strict_stack)
    topic = publisher.topic_path(PROJECT, "hostile")
    publisher.create_topic(name=topic)
    good = subscriber.subscription_path(PROJECT, "good")
    created = subscriber.create_subscription(request={"name": good, "topic": topic,
                                                      "push_config": {"push_endpoint": PUBLIC}})
    assert created.push_config.push_endpoint == PUBLIC  # the positive control
    for index, url in enumerate(HOSTILE):
        name = subscriber.subscription_path(PROJECT, f"bad-{index}")
        with pytest.raises(gexc.BadRequest) as at_create:
            subscriber.create_subscription(request={"name": name, "topic": topic,
                                                    "push_config": {"push_endpoint": url}})
        assert status_of(at_create.value) == "INVALID_ARGUMENT" and "push endpoint" in at_create.value.message, url
        with pytest.raises(gexc.NotFound):
            subscriber.get_subscription(request={"subscription": name})
        with pytest.raises(gexc.BadRequest) as at_modify:
            subscriber.modify_push_config(request={"subscription": good, "push_config": {"push_endpoint": url}})
        assert status_of(at_modify.value) == "INVALID_ARGUMENT", url
    assert subscriber.get_subscription(request={"subscription": good}).push_config.push_endpoint == PUBLIC


def test_strict_stack_allows_only_listed_service_accounts(strict_stack: RunningStack) -> None:
    publisher, subscriber = clients(strict_stack)
    topic = publisher.topic_path(PROJECT, "tokens")
    publisher.create_topic(name=topic)
    listed = subscriber.subscription_path(PROJECT, "listed")
    created = subscriber.create_subscription(request={"name": listed, "topic": topic, "push_config": {
        "push_endpoint": PUBLIC, "oidc_token": {"service_account_email": LISTED.upper()}}})
    assert created.push_config.oidc_token.service_account_email == LISTED.upper()
    victim = {"push_endpoint": PUBLIC, "oidc_token": {"service_account_email": "victim@other.example",
                                                      "audience": "https://victim.example"}}
    with pytest.raises(gexc.Forbidden) as at_create:
        subscriber.create_subscription(request={"name": subscriber.subscription_path(PROJECT, "victim"),
                                                "topic": topic, "push_config": victim})
    with pytest.raises(gexc.Forbidden) as at_modify:
        subscriber.modify_push_config(request={"subscription": listed, "push_config": victim})
    assert status_of(at_create.value) == status_of(at_modify.value) == "PERMISSION_DENIED"


def test_the_local_rules_refuse_the_emulator_and_metros_own_ports(stack: RunningStack) -> None:
    """The emulator's ``/moto-api/reset`` as a push endpoint wiped every tenant's data."""
    publisher, subscriber = clients(stack)
    topic = publisher.topic_path(PROJECT, "own-ports")
    publisher.create_topic(name=topic)
    for index, url in enumerate((f"{stack.emulator_url}/moto-api/reset", f"{stack.url}/v1/projects",
                                 f"https://{stack.ams_host}/v1/projects")):
        name = subscriber.subscription_path(PROJECT, f"own-port-{index}")
        with pytest.raises(gexc.BadRequest) as at_create:
            subscriber.create_subscription(request={"name": name, "topic": topic,
                                                    "push_config": {"push_endpoint": url}})
        assert status_of(at_create.value) == "INVALID_ARGUMENT" and "may never use it" in at_create.value.message


def test_crlf_attributes_are_delivered_once_and_acknowledged(stack: RunningStack) -> None:
    publisher, subscriber = clients(stack)
    webhook = Webhook()
    try:
        hook = webhook.hook(204, name="crlf")
        topic = publisher.topic_path(PROJECT, "crlf")
        publisher.create_topic(name=topic)
        name = subscriber.subscription_path(PROJECT, "crlf")
        subscriber.create_subscription(request={"name": name, "topic": topic, "push_config": {
            "push_endpoint": hook.url, "no_wrapper": {"write_metadata": True}}})
        poisoned = publisher.publish(topic, b"poisoned", kept="yes", injected="a\r\nX-Injected: 1",
                                     folded="a\r\n b", Cookie="session=1").result(timeout=30)
        control = publisher.publish(topic, b"control", kept="also").result(timeout=30)
        hook.wait_for(2, 30)
        ids = [r.headers.get("x-goog-pubsub-message-id") for r in list(hook.requests)]
        assert control in ids  # the positive control: a later message arrived after it
        assert ids.count(poisoned) == 1
        [got] = [r for r in hook.requests if r.headers.get("x-goog-pubsub-message-id") == poisoned]
        assert got.body == b"poisoned" and got.headers["kept"] == "yes"
        assert "x-injected" not in got.headers and "injected" not in got.headers and "folded" not in got.headers
        assert "cookie" not in got.headers
        # acknowledged: nothing is left for a pull
        subscriber.modify_push_config(request={"subscription": name, "push_config": {}})
        left = subscriber.pull(request={"subscription": name, "max_messages": 10, "return_immediately": True},
                               timeout=30)
        assert [m.message.message_id for m in left.received_messages] == []
    finally:
        webhook.close()
