"""Push through the deployed artifact: Metro makes the subscription's queue and its event source mapping onto the
push function, the emulator's mapping invokes the function with the queue's messages, and the function POSTs
them to a webhook with a token the stage signs; a failed delivery stays in the queue (partial batch failure)
and is sent again.

Deployed, Metro pushes only to https endpoints at public addresses, unless the operator allows a host
(METRO_PUSH_ALLOW_LIST). The webhook here is on this machine, so the fixture does what an operator with a
private endpoint does: it allows ``localhost`` on the API and push functions and makes them trust the webhook's
certificate (SSL_CERT_FILE), and it puts their configuration back afterwards. Deployed, the service accounts
push tokens may assert are the operator's too (METRO_PUSH_SERVICE_ACCOUNTS): the fixture assigns the test's
to its project.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import jwt
import pytest

from tests.e2e.test_auth_keys import call
from tests.rehearsal.conftest import PROJECT, Deployed, ok
from tests.unit.test_push_net import certificate
from tests.webhooks import Hook, Webhook

HOST = "localhost"
PUSHER = "pusher@rehearsal.example"
AUDIENCE = "https://receiver.example"


def set_environment(lam: Any, function: str, variables: dict[str, str]) -> None:
    lam.update_function_configuration(FunctionName=function, Environment={"Variables": variables})
    lam.get_waiter("function_updated_v2").wait(FunctionName=function, WaiterConfig={"Delay": 1, "MaxAttempts": 60})


@pytest.fixture(scope="module")
def webhook(deployed: Deployed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    folder = tmp_path_factory.mktemp("webhook")
    cert_pem, key_pem = certificate(HOST)
    (folder / "cert.pem").write_bytes(cert_pem)
    (folder / "key.pem").write_bytes(key_pem)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    server = Webhook()
    server.server.socket = tls.wrap_socket(server.server.socket, server_side=True)  # same descriptor, now TLS
    lam = boto3.client("lambda")
    functions = [deployed.names.function("api_handler"), deployed.names.function("push")]
    saved = {f: lam.get_function_configuration(FunctionName=f)["Environment"]["Variables"] for f in functions}
    for function, variables in saved.items():
        set_environment(lam, function, {**variables, "METRO_PUSH_ALLOW_LIST": HOST,
                                        "METRO_PUSH_SERVICE_ACCOUNTS": f"{PROJECT}={PUSHER}",
                                        "SSL_CERT_FILE": str(Path(folder / "cert.pem"))})
    yield server
    for function, variables in saved.items():
        set_environment(lam, function, variables)
    server.close()


def https_hook(webhook: Webhook, answer: Any) -> Hook:
    hook = webhook.hook(answer)
    hook.url = hook.url.replace("http://127.0.0.1:", f"https://{HOST}:")
    return hook


def check_token(deployed: Deployed, token: str) -> None:
    """The push token verifies with the keys the deployed API serves, and names the stage's API as its issuer."""
    cfn = boto3.client("cloudformation")
    stack = cfn.describe_stacks(StackName=deployed.names.app_stack)["Stacks"][0]
    issuer = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}["EndpointURL"].rstrip("/")
    key = jwt.PyJWKClient(f"{deployed.url}/v1/jwks").get_signing_key_from_jwt(token)
    claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=AUDIENCE, issuer=issuer)
    assert claims["email"] == PUSHER


def test_push_through_the_queue_mapping_with_a_retry(deployed: Deployed, webhook: Webhook, gapic: Any,
                                                     subscriber: Any, topic: str, unique: str) -> None:
    hook = https_hook(webhook, lambda index, request: 500 if index == 0 else 204)  # the first delivery fails
    name = f"projects/{PROJECT}/subscriptions/push-{unique}"
    made = call(deployed, "POST", f"/v1/projects/{PROJECT}", deployed.admin_key, {})  # type: ignore[arg-type]
    assert made.status_code in (200, 409), made.text  # 409: made by an earlier rehearsal on this emulator
    ok(deployed, "POST", f"/v1/projects/{PROJECT}:modifyPushIdentities", deployed.admin_key,
       {"service_accounts": [PUSHER]})
    subscriber.create_subscription(request={"name": name, "topic": topic, "ack_deadline_seconds": 10, "push_config": {
        "push_endpoint": hook.url, "oidc_token": {"service_account_email": PUSHER, "audience": AUDIENCE}}})
    from google.pubsub_v1 import PubsubMessage

    [sent] = gapic.publish(topic=topic, messages=[PubsubMessage(data=b"pushed", attributes={"k": "v"})]).message_ids
    requests = hook.wait_for(2, timeout=60)
    assert [r.message_id for r in requests] == [sent, sent], "the failed delivery was not sent again"
    body = requests[1].json()
    assert body["subscription"] == name
    assert body["message"]["attributes"] == {"k": "v"} and body["message"]["data"] == "cHVzaGVk"
    check_token(deployed, requests[1].headers["authorization"].removeprefix("Bearer "))
    mappings = boto3.client("lambda").list_event_source_mappings(FunctionName=deployed.names.function("push"))
    assert mappings["EventSourceMappings"], "Metro made no queue mapping for the push subscription"
    assert all(m["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings["EventSourceMappings"])
    rest = hook.quiet_after(lambda: gapic.publish(topic=topic, messages=[PubsubMessage(data=b"marker")])
                            .message_ids[0], window=3, timeout=60)
    assert [r.message_id for r in rest][:2] == [sent, sent] and len(rest) == 3, "an acknowledged push came back"
