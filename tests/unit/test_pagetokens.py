"""core/wire/pagetokens.py: page tokens round-trip, and every token the codec did not issue is refused the same way."""

from __future__ import annotations

import base64
import json

import pytest

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.pagetokens import MAX_TOKEN_CHARS, PageTokens

SCOPE = "project#p\ntopic#"
POSITION = {"sk": "topic#orders-2026"}
codec = PageTokens(b"secret-one")


def refused(token: str, scope: str = SCOPE, tokens: PageTokens = codec) -> str:
    with pytest.raises(InvalidArgument) as caught:
        tokens.decode(scope, token)
    return caught.value.message


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_a_token_round_trips_and_is_url_safe() -> None:
    token = codec.encode(SCOPE, POSITION)
    assert codec.decode(SCOPE, token) == POSITION
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")


def test_the_empty_token_is_the_first_page() -> None:
    assert codec.decode(SCOPE, "") is None


def test_a_raw_start_key_is_refused() -> None:
    assert refused("eyJwayI6MSwic2siOjJ9") == "Invalid page token"  # {"pk":1,"sk":2}, as tokens used to be


def test_a_tampered_payload_is_refused() -> None:
    payload, mac = codec.encode(SCOPE, POSITION).split(".")
    forged = b64(json.dumps({"sk": "topic#zzz"}, separators=(",", ":")).encode())
    assert forged != payload
    assert refused(f"{forged}.{mac}") == "Invalid page token"


def test_a_tampered_mac_is_refused() -> None:
    payload, mac = codec.encode(SCOPE, POSITION).split(".")
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
    refused(f"{payload}.{flipped}")


@pytest.mark.parametrize("cut", [1, 2, 5, 22])
def test_a_truncated_token_is_refused(cut: int) -> None:
    refused(codec.encode(SCOPE, POSITION)[:-cut])


def test_a_token_signed_with_another_key_is_refused() -> None:
    other = PageTokens(b"secret-two").encode(SCOPE, POSITION)
    refused(other)


def test_a_token_of_another_listing_is_refused() -> None:
    token = codec.encode("project#a\ntopic#", POSITION)
    assert codec.decode("project#a\ntopic#", token) == POSITION
    refused(token, scope="project#b\ntopic#")
    refused(token, scope="project#a\nsub#")


@pytest.mark.parametrize("garbage", ["garbage", ".", "..", "a.b.c", "abc.", ".abc", "%%%.%%%", "é.é", "\ud800.x",
                                     "eyJ9.AAAA", "A" * (MAX_TOKEN_CHARS + 1), "a b.c", "YQ==.YQ=="])
def test_garbage_is_refused_without_echoing_it(garbage: str) -> None:
    assert refused(garbage) == "Invalid page token"


@pytest.mark.parametrize("payload", [b"not json", b"[]", b"{}", b'{"sk": 1}', b'"sk"', b"\xff\xfe"])
def test_a_verified_payload_that_is_no_position_is_refused(payload: bytes) -> None:
    # Signed with the right key (a past format, say) yet not a position: refused, not a server error.
    mac = codec._mac(SCOPE, payload)
    refused(f"{b64(payload)}.{b64(mac)}")
