"""Opaque, authenticated page tokens for list calls (pure).

A token is ``{payload}.{mac}``, both base64url without padding: the payload is the JSON object of the
position where the next page starts (string fields only), the MAC an HMAC-SHA256 (truncated to 128 bits)
over the listing's *scope* and the payload, keyed by a key derived from the service secret. So a client
can neither forge a position nor move a token to another listing (another project, another topic),
and whatever does not verify, or does not parse, is answered with one INVALID_ARGUMENT that names no
detail of the token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping

from chalicelib.core.errors import InvalidArgument

MAX_TOKEN_CHARS = 2048  # real tokens hold two resource names (each at most 255 characters) and stay far below
MAC_BYTES = 16
_KEY_LABEL = b"metro page tokens v1"
_INVALID = "Invalid page token"


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _b64decode(text: str) -> bytes:
    """Strict base64url without padding: any other character, or a bad length, raises ValueError."""
    if len(text) % 4 == 1:
        raise ValueError("truncated base64")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from None


class PageTokens:
    """Encodes and verifies the page tokens of every listing keyed by one secret."""

    def __init__(self, secret: bytes) -> None:
        self._key = hmac.new(secret, _KEY_LABEL, hashlib.sha256).digest()

    def _mac(self, scope: str, payload: bytes) -> bytes:
        message = scope.encode("utf-8", "surrogatepass") + b"\n" + payload
        return hmac.new(self._key, message, hashlib.sha256).digest()[:MAC_BYTES]

    def encode(self, scope: str, position: Mapping[str, str]) -> str:
        """The token that resumes the listing ``scope`` at ``position``."""
        payload = json.dumps(dict(position), separators=(",", ":"), sort_keys=True).encode()
        return f"{_b64encode(payload)}.{_b64encode(self._mac(scope, payload))}"

    def decode(self, scope: str, token: str) -> dict[str, str] | None:
        """The position a token of ``scope`` holds; None for the empty token (the first page).

        Raises InvalidArgument("Invalid page token") for a token this codec did not issue for ``scope``.
        """
        if not token:
            return None
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
            raise InvalidArgument(_INVALID)
        encoded_payload, encoded_mac = token.split(".")
        try:
            payload, mac = _b64decode(encoded_payload), _b64decode(encoded_mac)
        except ValueError:
            raise InvalidArgument(_INVALID) from None
        if not hmac.compare_digest(mac, self._mac(scope, payload)):
            raise InvalidArgument(_INVALID)
        return _position(payload)


def _position(payload: bytes) -> dict[str, str]:
    """The verified payload as a position (a token from an older format that verifies but does not parse
    is refused like any other bad token)."""
    try:
        position = json.loads(payload)
    except ValueError:
        raise InvalidArgument(_INVALID) from None
    if not isinstance(position, dict) or not position or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in position.items()):
        raise InvalidArgument(_INVALID)
    return position
