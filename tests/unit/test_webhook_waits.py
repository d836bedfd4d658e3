"""The push tests' webhook waits: a push that lands before the publish that sent it returns is still seen."""

from __future__ import annotations

import json

import pytest

from tests.webhooks import Hook, Request


def _pushed(message_id: str) -> Request:
    body = json.dumps({"message": {"messageId": message_id}, "subscription": "projects/p/subscriptions/s"})
    return Request(0.0, "/hook-0", {}, body.encode())


def test_a_push_that_came_before_the_publish_returned_is_found() -> None:
    hook = Hook("http://127.0.0.1:1/hook-0", lambda i, r: 204)
    hook.requests += [_pushed("earlier"), _pushed("awaited")]  # pushed while the publish was still answering
    assert hook.wait_for_message("awaited", 0).message_id == "awaited"
    # Counting after the publish would have waited for a third request that never comes.
    assert len(hook.wait_for(len(hook.requests) + 1, 0)) == 2


def test_another_message_does_not_end_the_wait() -> None:
    hook = Hook("http://127.0.0.1:1/hook-0", lambda i, r: 204)
    hook.requests.append(_pushed("earlier"))
    with pytest.raises(AssertionError, match="awaited was not pushed"):
        hook.wait_for_message("awaited", 0)
