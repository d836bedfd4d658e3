"""The push HTTP client (``http_post``) checked against the recording webhook server of tests/webhooks.py."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from chalicelib.config import Config
from chalicelib.delivery.push_request import http_poster
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.workers import Workers
from tests.stack import free_port
from tests.webhooks import DROP, Webhook

http_post = http_poster(EndpointResolver(Config(), Workers()))


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


# -- the push HTTP client against the webhook -------------------------------------------------------------


@pytest.mark.parametrize("status", [102, 200, 201, 202, 204, 203, 302, 400, 500, 503])
def test_http_post_returns_the_status(webhook: Webhook, status: int) -> None:
    hook = webhook.hook(status)
    assert http_post(hook.url, b"{}", {"Content-Type": "application/json"}, 5.0) == status
    assert http_post(hook.url, b"{}", {}, 5.0) == status  # the connection after a 102 is not reused
    assert hook.requests[0].headers["content-type"] == "application/json"


def test_http_post_times_out_and_survives_dropped_connections(webhook: Webhook) -> None:
    slow = webhook.hook(lambda i, r: (1.0, 200) if i == 0 else 204)
    start = time.monotonic()
    assert http_post(slow.url, b"x", {}, 0.3) is None
    assert time.monotonic() - start < 0.9
    assert http_post(slow.url, b"x", {}, 2.0) == 204
    dropped = webhook.hook(lambda i, r: DROP if i < 2 else 200)
    # The kept connection of the 204 above is dropped: sent once more on a new connection, dropped again.
    assert http_post(dropped.url, b"x", {}, 2.0) is None
    assert len(dropped.requests) == 2 and len({r.peer for r in dropped.requests}) == 2
    assert http_post(dropped.url, b"x", {}, 2.0) == 200


def test_http_post_to_a_closed_port_fails_fast() -> None:
    port = free_port()
    start = time.monotonic()
    assert http_post(f"http://127.0.0.1:{port}/x", b"x", {}, 5.0) is None
    assert time.monotonic() - start < 1.0


def test_http_post_reuses_connections(webhook: Webhook) -> None:
    hook = webhook.hook(204)
    for _ in range(5):
        assert http_post(hook.url, b"x", {}, 2.0) == 204
    assert len({r.peer for r in hook.requests}) == 1  # one keep-alive connection
    after_102 = webhook.hook(102)
    for _ in range(3):
        assert http_post(after_102.url, b"x", {}, 2.0) == 102
    assert len({r.peer for r in after_102.requests}) == 3  # closed after each interim answer
