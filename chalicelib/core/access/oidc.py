"""Signing of push-request tokens (``pushConfig.oidcToken``).

For a push subscription with ``oidcToken {serviceAccountEmail, audience}``, Metro puts
``Authorization: Bearer <jwt>`` on each push request, like Google does. The token is an
RS256 JWT:

    header : {"alg": "RS256", "typ": "JWT", "kid": <key id>}
    claims : {"iss", "aud", "azp", "email", "email_verified": true, "sub", "iat", "exp"}

``sub`` and ``azp`` are the service account email. The key id is the RFC 7638 JWK
thumbprint (SHA-256, base64url without padding) of the public key, so it changes exactly
when the key changes. Push endpoints verify the token against the JWKS document returned by
:meth:`TokenSigner.jwks`.

This module is pure: it does not know where the key is stored (a secret when deployed, a file
in local mode, made by :func:`generate_signing_key`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ALGORITHM = "RS256"
DEFAULT_LIFETIME = 3600


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_uint(value: int) -> str:
    """Base64url of the unsigned big-endian bytes of ``value`` without leading zeros (RFC 7518)."""
    length = max(1, (value.bit_length() + 7) // 8)
    return _b64url(value.to_bytes(length, "big"))


def jwk_thumbprint(n: int, e: int) -> str:
    """RFC 7638 thumbprint of the RSA public key (n, e): SHA-256 of the canonical JWK, base64url."""
    canonical = json.dumps(
        {"e": _b64url_uint(e), "kty": "RSA", "n": _b64url_uint(n)}, separators=(",", ":"), sort_keys=True
    )
    return _b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


def generate_signing_key() -> str:
    """Return a new RSA 2048 private key as an unencrypted PKCS#8 PEM string (local mode)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    )
    return pem.decode("ascii")


class TokenSigner:
    """Signs push tokens with one RSA private key and publishes the matching JWKS."""

    def __init__(self, private_key_pem: str, issuer: str) -> None:
        try:
            key = serialization.load_pem_private_key(private_key_pem.encode("utf-8"), password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"the push signing key is not a valid unencrypted PEM private key: {exc}") from exc
        if not isinstance(key, rsa.RSAPrivateKey):
            raise TypeError("the push signing key must be an RSA private key")
        if key.key_size < 2048:
            raise ValueError(f"the push signing key must have at least 2048 bits, not {key.key_size}")
        if not issuer:
            raise ValueError("the token issuer must not be empty")
        self._key = key
        self.issuer = issuer
        numbers = key.public_key().public_numbers()
        self._n = _b64url_uint(numbers.n)
        self._e = _b64url_uint(numbers.e)
        self.key_id = jwk_thumbprint(numbers.n, numbers.e)

    def sign(self, email: str, audience: str, now: float, lifetime: int = DEFAULT_LIFETIME) -> str:
        """Return a token for ``email`` (the service account) valid for ``audience``.

        ``now`` is a Unix time in seconds; the token is valid from ``int(now)`` for ``lifetime`` seconds.
        """
        if not email:
            raise ValueError("the token email must not be empty")
        if not audience:
            raise ValueError("the token audience must not be empty")
        if lifetime <= 0:
            raise ValueError(f"the token lifetime must be positive, not {lifetime}")
        issued = int(now)
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": audience,
            "azp": email,
            "email": email,
            "email_verified": True,
            "sub": email,
            "iat": issued,
            "exp": issued + lifetime,
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"kid": self.key_id, "typ": "JWT"})

    def jwk(self) -> dict[str, str]:
        """The public key as a JWK (RFC 7517)."""
        return {"kty": "RSA", "n": self._n, "e": self._e, "kid": self.key_id, "alg": ALGORITHM, "use": "sig"}

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JWKS document (``{"keys": [jwk]}``) that push endpoints verify tokens with."""
        return {"keys": [self.jwk()]}
