"""The AMS dialect as deployed: argo-ams-library 1.0.0, unchanged, against the stage's AMS API (the second API
Gateway API whose stage variable ``dialect=ams`` selects the dialect), in keys mode. The library speaks https
only and cannot send a path prefix, so it reaches the emulator's path-style URL through a TLS-terminating
proxy on 127.0.0.1 (tests/rehearsal/tls_proxy.py), which stands in for the AMS API's custom domain.

Tokens are made as the keys tests make them (the admin token from SSM, users through the Google API URL); the
library's helpers make the topic and subscription; publish, pull and acknowledge as the right users, 403 for
the wrong ones, 401 for an unknown token; and one topic shared with a Google client through the Google API URL
of the same stage."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from argo_ams_library import AmsMessage, AmsServiceException, ArgoMessagingService
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials

from infra.deploy import outputs, reachable_endpoint
from tests.e2e.polling import pull_until
from tests.rehearsal.conftest import Deployed, ok
from tests.rehearsal.tls_proxy import TlsProxy


@pytest.fixture(scope="module")
def ams_proxy(deployed: Deployed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsProxy]:
    """The proxy in front of the stage's AMS API (its URL from the app stack's ``AmsEndpointURL`` output)."""
    cfn = boto3.client("cloudformation")  # AWS_ENDPOINT_URL: the emulator
    ams_url = outputs(cfn, deployed.names.app_stack)["AmsEndpointURL"]
    upstream = reachable_endpoint(ams_url, cfn.meta.endpoint_url)
    assert upstream != deployed.url.rstrip("/"), "the AMS API must be an API of its own"
    proxy = TlsProxy(upstream, tmp_path_factory.mktemp("ams-tls")).start()
    yield proxy
    proxy.stop()


class Ams:
    """One project's users as argo-ams-library clients through the proxy."""

    def __init__(self, proxy: TlsProxy, project: str, tokens: dict[str, str]) -> None:
        self.proxy, self.project, self.tokens = proxy, project, tokens
        self.verify: dict[str, Any] = {"verify": str(proxy.cert)}

    def client(self, who: str) -> ArgoMessagingService:
        token = self.tokens.get(who, who)  # a name of ``tokens``, or a token as it is
        return ArgoMessagingService(endpoint=self.proxy.host, token=token, project=self.project)


@pytest.fixture(scope="module")
def ams(deployed: Deployed, ams_proxy: TlsProxy) -> Ams:
    """A project with a project admin, a publisher and a consumer, made through the Google API URL."""
    project = f"ams-{int(time.time())}"
    ok(deployed, "POST", f"/v1/projects/{project}", deployed.admin_key, {"description": "rehearsal, AMS"})
    tokens = {}
    for name, role in (("boss", "project_admin"), ("pub", "publisher"), ("con", "consumer")):
        user = ok(deployed, "POST", f"/v1/users/{project}-{name}", deployed.admin_key,
                  {"projects": [{"project": project, "roles": [role]}]})
        tokens[name] = user["token"]
    return Ams(ams_proxy, project, tokens)


def refused(call: Callable[[], Any], code: int) -> None:
    with pytest.raises(AmsServiceException) as caught:
        call()
    assert caught.value.code == code


def test_the_library_publishes_pulls_and_acknowledges_as_the_right_users(ams: Ams) -> None:
    v, project = ams.verify, ams.project
    boss, pub, con = (ams.client(u) for u in ("boss", "pub", "con"))
    topic = boss.topic("orders", **v)  # the library's helper: has_topic, then create_topic
    # AMS's leading-slash names: the stage variable switched the deployed handler to the AMS dialect
    assert (topic.fullname, topic.name) == (f"/projects/{project}/topics/orders", "orders")
    sub = topic.subscription("orders-sub", **v)
    assert (sub.fullname, sub.topic.name) == (f"/projects/{project}/subscriptions/orders-sub", "orders")
    assert topic.acl([f"{project}-pub"], **v) and sub.acl([f"{project}-con"], **v)

    ids = pub.publish("orders", [AmsMessage(data="hello", attributes={"k": "v"}), AmsMessage(data="world")], **v)
    assert len(ids["messageIds"]) == 2
    got = pull_until(lambda: con.pull_sub("orders-sub", num=5, return_immediately=True, **v), 2, 30)
    assert sorted(m.get_data() for _, m in got) == [b"hello", b"world"]
    assert {m.get_msgid() for _, m in got} == set(ids["messageIds"])
    refused(lambda: pub.ack_sub("orders-sub", [ack for ack, _ in got], **v), 403)  # a publisher never acks
    assert con.ack_sub("orders-sub", [ack for ack, _ in got], **v)
    assert con.pull_sub("orders-sub", num=5, return_immediately=True, **v) == []

    refused(lambda: con.publish("orders", [AmsMessage(data="x")], **v), 403)  # a consumer never publishes
    refused(lambda: pub.pull_sub("orders-sub", num=1, return_immediately=True, **v), 403)
    refused(lambda: ams.client("not-a-token").get_topic("orders", **v), 401)


def test_a_google_client_and_the_library_share_a_topic(deployed: Deployed, ams: Ams) -> None:
    v, project, boss = ams.verify, ams.project, ams.client("boss")
    boss.create_topic("shared", **v)
    boss.create_sub("shared-ams", "shared", **v)
    credentials = Credentials(ams.tokens["boss"])
    google = pubsub_v1.PublisherClient(transport="rest", client_options=deployed.client_options(),
                                       credentials=credentials)
    google_sub = pubsub_v1.SubscriberClient(transport="rest", client_options=deployed.client_options(),
                                            credentials=credentials)
    topic, google_sub_name = f"projects/{project}/topics/shared", f"projects/{project}/subscriptions/shared-google"
    google_sub.create_subscription(name=google_sub_name, topic=topic)
    from_google = google.publish(topic, b"from google", origin="google").result(timeout=60)
    from_ams = boss.publish("shared", [AmsMessage(data="from ams", attributes={"origin": "ams"})],
                            **v)["messageIds"][0]
    got = pull_until(lambda: boss.pull_sub("shared-ams", num=10, return_immediately=True, **v), 2, 30)
    assert {(m.get_msgid(), m.get_data()) for _, m in got} == {(from_google, b"from google"),
                                                               (from_ams, b"from ams")}
    pulled = pull_until(lambda: list(google_sub.pull(subscription=google_sub_name, max_messages=10,
                                                     return_immediately=True).received_messages), 2, 30)
    assert {(m.message.message_id, m.message.attributes["origin"]) for m in pulled} == {
        (from_google, "google"), (from_ams, "ams")}
