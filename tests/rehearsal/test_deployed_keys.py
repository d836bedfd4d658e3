"""Keys mode in the deployed configuration: the stage was deployed without METRO_AUTH (so keys), its admin token
is the one the deploy put in SSM Parameter Store, and the functions read every secret from there. Users, roles
and ACLs made through API Gateway decide who may publish, pull and acknowledge, for curl-like calls with
``x-api-key`` and for google-cloud-pubsub with a bearer token; a deleted user's token stops working within the
cache bound."""

from __future__ import annotations

import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials

from chalicelib.config import MAX_AUTH_CACHE_SECONDS
from tests.e2e.test_auth_keys import call, denied, pull_until
from tests.rehearsal.conftest import Deployed, ok


@pytest.fixture(scope="module")
def tokens(deployed: Deployed) -> dict[str, str]:
    """A project with a project admin, a publisher and a consumer, a topic and a subscription with ACLs."""
    project = f"keys-{int(time.time())}"
    ok(deployed, "POST", f"/v1/projects/{project}", deployed.admin_key, {"description": "rehearsal"})
    made = {"project": project}
    for name, role in (("boss", "project_admin"), ("pub", "publisher"), ("con", "consumer")):
        user = ok(deployed, "POST", f"/v1/users/{project}-{name}", deployed.admin_key,
                  {"projects": [{"project": project, "roles": [role]}]})
        made[name] = user["token"]
    topic, sub = f"projects/{project}/topics/orders", f"projects/{project}/subscriptions/orders-sub"
    ok(deployed, "PUT", f"/v1/{topic}", made["boss"], {})
    ok(deployed, "PUT", f"/v1/{sub}", made["boss"], {"topic": topic})
    ok(deployed, "POST", f"/v1/{topic}:modifyAcl", made["boss"], {"authorized_users": [f"{project}-pub"]})
    ok(deployed, "POST", f"/v1/{sub}:modifyAcl", made["boss"], {"authorized_users": [f"{project}-con"]})
    return made


def test_a_token_is_required_and_unknown_ones_are_refused(deployed: Deployed) -> None:
    denied(call(deployed, "GET", "/v1/projects", None), 401, "UNAUTHENTICATED")  # type: ignore[arg-type]
    denied(call(deployed, "GET", "/v1/projects", "not-a-token"), 401, "UNAUTHENTICATED")  # type: ignore[arg-type]
    assert call(deployed, "GET", "/", None).status_code == 200  # type: ignore[arg-type]


def test_roles_and_acls_with_google_clients(deployed: Deployed, tokens: dict[str, str]) -> None:
    project = tokens["project"]
    topic, sub = f"projects/{project}/topics/orders", f"projects/{project}/subscriptions/orders-sub"

    def client(kind: Any, who: str) -> Any:
        return kind(transport="rest", client_options=deployed.client_options(), credentials=Credentials(tokens[who]))

    message_id = client(pubsub_v1.PublisherClient, "pub").publish(topic, b"by the publisher").result(timeout=60)
    with pytest.raises(gexc.Forbidden):
        client(pubsub_v1.PublisherClient, "con").publish(topic, b"by the consumer").result(timeout=60)
    consumer = client(pubsub_v1.SubscriberClient, "con")
    received = pull_until(lambda: list(consumer.pull(subscription=sub, max_messages=10).received_messages), 1, 30)
    assert [m.message.message_id for m in received] == [message_id]
    with pytest.raises(gexc.Forbidden):
        client(pubsub_v1.SubscriberClient, "pub").acknowledge(subscription=sub, ack_ids=[received[0].ack_id])
    consumer.acknowledge(subscription=sub, ack_ids=[received[0].ack_id])
    # no existence oracle: another project's resources answer 403 whether they exist or not
    denied(call(deployed, "GET", "/v1/projects/elsewhere/topics/orders", tokens["boss"]))  # type: ignore[arg-type]


def test_a_deleted_users_token_stops_working_within_the_cache_bound(deployed: Deployed,
                                                                    tokens: dict[str, str]) -> None:
    name = f"{tokens['project']}-temp"
    token = ok(deployed, "POST", f"/v1/users/{name}", deployed.admin_key,
               {"projects": [{"project": tokens["project"], "roles": ["consumer"]}]})["token"]
    assert ok(deployed, "GET", "/v1/users/profile", token)["name"] == name  # positive control
    ok(deployed, "DELETE", f"/v1/users/{name}", deployed.admin_key)
    deadline = time.monotonic() + MAX_AUTH_CACHE_SECONDS + 10
    while call(deployed, "GET", "/v1/users/profile", token).status_code != 401:  # type: ignore[arg-type]
        assert time.monotonic() < deadline, "the deleted user's token still works past the cache bound"
        time.sleep(0.5)
