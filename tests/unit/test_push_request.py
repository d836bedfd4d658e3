"""The push request for one message (pure: no AWS, no HTTP)."""

from __future__ import annotations

import json

import pytest

from chalicelib.core.queueing.envelope import Envelope
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.models import DeadLetterPolicy, NoWrapper, OidcToken, PushConfig, Subscription
from chalicelib.delivery.push_request import Item, build_request

NAME = "projects/myproject/subscriptions/mysubscription"


def rec(**push: object) -> SubscriptionRecord:
    spec = Subscription(name=NAME, topic="projects/myproject/topics/top",
                        push_config=PushConfig(push_endpoint="https://example.com/push", **push))  # type: ignore[arg-type]
    return SubscriptionRecord(spec, 0.0, "https://sqs/1/q-1", 1)


def item(data: bytes = b"Hello Cloud Pub/Sub! Here is my message!", **env: object) -> Item:
    envelope = Envelope("2070443601311540", "2021-02-26T19:13:55.749123Z", data=data, **env)  # type: ignore[arg-type]
    return Item("sqs-1", "receipt", 3, "sqs-1", envelope, data)


def test_the_seed_document_example_byte_for_byte() -> None:
    body, headers = build_request(rec(), item(attributes={"key": "value"}), None)
    assert body == (
        b'{"message":{"data":"SGVsbG8gQ2xvdWQgUHViL1N1YiEgSGVyZSBpcyBteSBtZXNzYWdlIQ==","attributes":{"key":"value"},'
        b'"messageId":"2070443601311540","message_id":"2070443601311540",'
        b'"publishTime":"2021-02-26T19:13:55.749Z","publish_time":"2021-02-26T19:13:55.749Z"},'
        b'"subscription":"projects/myproject/subscriptions/mysubscription"}'
    )
    assert headers["Content-Type"] == "application/json" and "Authorization" not in headers


def test_delivery_attempt_and_ordering_key() -> None:
    record = rec()
    spec = record.spec.model_copy(update={"dead_letter_policy": DeadLetterPolicy(
        dead_letter_topic="projects/myproject/topics/dead", max_delivery_attempts=5)})
    body, _ = build_request(record.with_spec(spec), item(ordering_key="k\u00e9"), "tok")
    parsed = json.loads(body)
    assert parsed["deliveryAttempt"] == 3 and parsed["message"]["orderingKey"] == "k\u00e9"
    assert "k\u00e9".encode() in body  # UTF-8, not \\u escapes


def test_bearer_token_header() -> None:
    _, headers = build_request(rec(oidc_token=OidcToken(service_account_email="a@b.c")), item(), "tok")
    assert headers["Authorization"] == "Bearer tok"


def test_no_wrapper_without_metadata_is_just_the_bytes() -> None:
    body, headers = build_request(rec(no_wrapper=NoWrapper()), item(b"\x00\x01", attributes={"a": "b"}), None)
    assert body == b"\x00\x01"
    assert headers == {"User-Agent": headers["User-Agent"], "Content-Type": "application/octet-stream"}


def test_empty_data_is_an_empty_string() -> None:
    body, _ = build_request(rec(), item(b"", attributes={"only": "attrs"}), None)
    assert json.loads(body)["message"]["data"] == ""


def test_push_tokens_are_reused_until_shortly_before_they_expire() -> None:
    from chalicelib.config import Config
    from chalicelib.service.push_config import push_token

    config = Config(deployed=False, push_signing_key="")
    first = push_token(config, "proj", "a@b.c", "aud", 1_000_000.0)
    assert first is not None
    assert push_token(config, "proj", "a@b.c", "aud", 1_000_100.0) == first
    assert push_token(config, "proj", "a@b.c", "other", 1_000_100.0) != first
    assert push_token(config, "proj", "a@b.c", "aud", 1_003_400.0) != first  # within 5 minutes of expiry: a new one
    assert push_token(config, "proj", "a@b.c", "aud", 999_000.0) != first  # never a token issued in the future
    assert push_token(Config(deployed=True, push_signing_key=""), "proj", "a@b.c", "aud", 1_000_000.0) is None


# -- noWrapper.writeMetadata: attributes as headers, safely ----------------------------------------------
def metadata_request(**env: object) -> dict[str, str]:
    _, headers = build_request(rec(no_wrapper=NoWrapper(write_metadata=True)), item(b"x", **env), None)
    return headers


def test_attribute_values_with_control_characters_are_left_out() -> None:
    headers = metadata_request(attributes={
        "ok": "fine \u00e9", "crlf": "a\r\nX-Injected: 1", "lf": "a\nb", "folded": "a\r\n b", "nul": "a\x00b",
        "tab": "a\tb", "del": "a\x7fb", "c1": "a\x85b", "utf8": "\u2603",
    })
    assert headers["ok"] == "fine \u00e9" and headers["utf8"] == "\u2603".encode().decode("latin-1")
    for key in ("crlf", "lf", "folded", "nul", "tab", "del", "c1"):
        assert key not in headers
    assert not any("\r" in v or "\n" in v for v in headers.values())


def test_an_ordering_key_with_crlf_is_not_a_header() -> None:
    headers = metadata_request(ordering_key="k\r\nX-Injected: 1")
    assert "x-goog-pubsub-ordering-key" not in headers and "x-goog-pubsub-message-id" in headers
    assert metadata_request(ordering_key="key-1")["x-goog-pubsub-ordering-key"] == "key-1"


@pytest.mark.parametrize("key", [
    "Cookie", "X-Forwarded-For", "x-forwarded-host", "Forwarded", "Content-Encoding", "Content-Length", "Host",
    "Authorization", "Proxy-Authorization", "Transfer-Encoding", "Connection", "Upgrade", "TE", "Via", "User-Agent",
    "x-goog-pubsub-message-id", "X-Goog-Api-Key", "Sec-Fetch-Site", "X-Amz-Security-Token", "Proxy-Foo",
    "bad key", "bad:key", "",
])
def test_attributes_never_override_hop_by_hop_framing_or_security_headers(key: str) -> None:
    headers = metadata_request(attributes={key: "evil", "colour": "blue"})
    assert headers["colour"] == "blue"
    assert all(v != "evil" for v in headers.values())


def test_http_post_nacks_whatever_one_request_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from chalicelib.config import Config
    from chalicelib.delivery.push_request import http_poster
    from chalicelib.store import http_client
    from chalicelib.store.resolver import EndpointResolver
    from chalicelib.store.workers import Workers

    http_post = http_poster(EndpointResolver(Config(), Workers()))
    # a header value http.client refused with ValueError, which escaped the old http_post
    assert http_post("http://127.0.0.1:9/x", b"x", {"X-A": "a\r\nb"}, 1.0) is None

    def broken(*args: object) -> int:
        raise RuntimeError("anything")

    monkeypatch.setattr(http_client, "post", broken)
    assert http_post("http://127.0.0.1:9/x", b"x", {}, 1.0) is None


# -- service accounts push tokens may assert ----------------------------------------------------------------
def test_service_accounts_are_open_locally_and_listed_when_strict() -> None:
    from chalicelib.config import Config
    from chalicelib.service.push_config import push_token, service_account_allowed

    local = Config(deployed=False, push_strict=False, push_service_accounts=())
    assert service_account_allowed(local, "proj", "anyone@example.com")
    for closed in (Config(deployed=False, push_strict=True, push_service_accounts=()),
                   Config(deployed=True, push_service_accounts=())):
        assert not service_account_allowed(closed, "proj", "anyone@example.com")
    listed = Config(deployed=False, push_strict=True, push_service_accounts=("pusher@metro.example",))
    assert service_account_allowed(listed, "proj", "Pusher@Metro.Example")
    assert not service_account_allowed(listed, "proj", "victim@example.com")
    assert not service_account_allowed(Config(deployed=False, push_service_accounts=("a@b.c",)), "proj", "x@b.c")
    # and again at delivery: no token for an identity Metro may not act as
    assert push_token(listed, "proj", "victim@example.com", "aud", 1_000_000.0) is None
    assert push_token(listed, "proj", "pusher@metro.example", "aud", 1_000_000.0) is not None


def test_in_keys_mode_a_project_names_only_service_accounts_it_owns() -> None:
    from chalicelib.config import Config
    from chalicelib.service.push_config import push_token, service_account_allowed

    keys = Config(deployed=False, auth_mode="keys", push_service_accounts=("orders=ops@example.com",
                                                                            "shared@example.com"))
    assert service_account_allowed(keys, "orders", "push@orders.iam.gserviceaccount.com")
    assert service_account_allowed(keys, "orders", "OPS@example.com")
    assert not service_account_allowed(keys, "billing", "push@orders.iam.gserviceaccount.com")
    assert not service_account_allowed(keys, "billing", "ops@example.com")
    assert not service_account_allowed(keys, "orders", "shared@example.com")  # plain entries: open mode only
    assert not service_account_allowed(keys, "orders", "@orders.iam.gserviceaccount.com")
    assert push_token(keys, "billing", "push@orders.iam.gserviceaccount.com", "aud", 1_000_000.0) is None
    assert push_token(keys, "orders", "push@orders.iam.gserviceaccount.com", "aud", 1_000_000.0) is not None
    opened = Config(deployed=False, push_strict=True, push_service_accounts=("orders=ops@example.com",))
    assert service_account_allowed(opened, "orders", "ops@example.com")
    assert not service_account_allowed(opened, "billing", "ops@example.com")
