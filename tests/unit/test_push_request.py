"""The push request for one message (pure: no AWS, no HTTP)."""

from __future__ import annotations

import json

from chalicelib.core.envelope import Envelope
from chalicelib.core.models import DeadLetterPolicy, NoWrapper, OidcToken, PushConfig, Subscription
from chalicelib.core.records import SubscriptionRecord
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
    first = push_token(config, "a@b.c", "aud", 1_000_000.0)
    assert first is not None
    assert push_token(config, "a@b.c", "aud", 1_000_100.0) == first
    assert push_token(config, "a@b.c", "other", 1_000_100.0) != first
    assert push_token(config, "a@b.c", "aud", 1_003_400.0) != first  # within 5 minutes of expiry: a new one
    assert push_token(config, "a@b.c", "aud", 999_000.0) != first  # never a token issued in the future
    assert push_token(Config(deployed=True, push_signing_key=""), "a@b.c", "aud", 1_000_000.0) is None
