"""A push that outlives its timeout is a nack, and the message comes again.

The push timeout is the subscription's ack deadline (at least 10 s), which would make this test
slow; this module starts its own stack with ``METRO_PUSH_TIMEOUT_SECONDS=1``, the configuration
cap on that timeout (also useful in production to keep push Lambdas short).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
import requests

from tests.stack import RunningStack, start_stack
from tests.webhooks import Request, Webhook

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def short_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("push-timeout") / "metro.log",
                          extra_env={"METRO_PUSH_TIMEOUT_SECONDS": "1"})
    yield running
    running.stop()


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    server = Webhook()
    yield server
    server.close()


def test_a_push_past_its_timeout_is_redelivered(short_stack: RunningStack, webhook: Webhook) -> None:
    def slow_first(i: int, r: Request) -> int | tuple[float, int]:
        return (2.5, 200) if i == 0 else 204

    hook = webhook.hook(slow_first)
    base = f"{short_stack.url}/v1/projects/e2e-push"
    assert requests.put(f"{base}/topics/slow").status_code == 200
    resp = requests.put(f"{base}/subscriptions/slow-sub", json={
        "topic": "projects/e2e-push/topics/slow", "ackDeadlineSeconds": 10, "pushConfig": {"pushEndpoint": hook.url}})
    assert resp.status_code == 200, resp.text

    def publish(data: bytes) -> str:
        message = {"data": base64.b64encode(data).decode()}
        resp = requests.post(f"{base}/topics/slow:publish", json={"messages": [message]})
        return str(resp.json()["messageIds"][0])

    mid = publish(b"z")
    first, second = hook.wait_for(2, 20)[:2]
    assert first.message_id == second.message_id == mid
    assert second.at - first.at >= 1.0  # timed out after 1 s, then the throttle's pause
    assert second.at - first.at < 9.0  # long before the 10 s ack deadline would have expired
    hook.quiet_after(lambda: publish(b"marker"), window=2.0)
    assert hook.ids()[:2] == [mid, mid] and len(hook.requests) == 3  # the late ack's retry was acked
