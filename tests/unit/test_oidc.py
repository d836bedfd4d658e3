"""Push-request token signing, verified the way a push endpoint would (JWKS, RS256)."""

from __future__ import annotations

import base64
import hashlib
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from chalicelib.core.access.oidc import TokenSigner, generate_signing_key, jwk_thumbprint

ISSUER = "https://metro.example.com"
EMAIL = "pusher@my-project.iam.gserviceaccount.com"
AUDIENCE = "https://push.example.com/handler"


@pytest.fixture(scope="module")
def pem() -> str:
    return generate_signing_key()


@pytest.fixture(scope="module")
def signer(pem: str) -> TokenSigner:
    return TokenSigner(pem, ISSUER)


def verify(signer: TokenSigner, token: str, audience: str = AUDIENCE) -> dict[str, object]:
    key = jwt.PyJWK(signer.jwks()["keys"][0])
    claims: dict[str, object] = jwt.decode(token, key, algorithms=["RS256"], audience=audience, issuer=ISSUER)
    return claims


def test_generated_key_is_pkcs8_rsa_2048(pem: str) -> None:
    assert pem.startswith("-----BEGIN PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == 2048
    assert generate_signing_key() != pem


def test_token_verifies_with_the_jwks(signer: TokenSigner) -> None:
    now = time.time()
    token = signer.sign(EMAIL, AUDIENCE, now)
    claims = verify(signer, token)
    assert claims == {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "azp": EMAIL,
        "email": EMAIL,
        "email_verified": True,
        "sub": EMAIL,
        "iat": int(now),
        "exp": int(now) + 3600,
    }


def test_header_kid_matches_the_jwks(signer: TokenSigner) -> None:
    header = jwt.get_unverified_header(signer.sign(EMAIL, AUDIENCE, time.time(), lifetime=60))
    assert header["alg"] == "RS256"
    assert header["kid"] == signer.key_id
    (jwk,) = signer.jwks()["keys"]
    assert jwk["kid"] == signer.key_id
    assert {k: jwk[k] for k in ("kty", "alg", "use", "e")} == {"kty": "RSA", "alg": "RS256", "use": "sig", "e": "AQAB"}


def test_key_id_is_the_rfc7638_thumbprint(signer: TokenSigner, pem: str) -> None:
    jwk = signer.jwks()["keys"][0]
    canonical = '{"e":"' + jwk["e"] + '","kty":"RSA","n":"' + jwk["n"] + '"}'
    expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    assert signer.key_id == expected
    # Stable for the same key, different for another one; n has no padding or leading zero byte.
    assert TokenSigner(pem, "other").key_id == signer.key_id
    assert TokenSigner(generate_signing_key(), ISSUER).key_id != signer.key_id
    n = base64.urlsafe_b64decode(jwk["n"] + "==")
    assert "=" not in jwk["n"] and len(n) == 256 and n[0] != 0


def test_rfc7638_example_thumbprint() -> None:
    # The example key of RFC 7638 section 3.1 and its published thumbprint.
    n_b64 = (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhM"
        "stn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5"
        "hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    )
    n = int.from_bytes(base64.urlsafe_b64decode(n_b64 + "=="), "big")
    assert jwk_thumbprint(n, 65537) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_wrong_audience_is_rejected(signer: TokenSigner) -> None:
    token = signer.sign(EMAIL, AUDIENCE, time.time())
    with pytest.raises(jwt.InvalidAudienceError):
        verify(signer, token, audience="https://elsewhere.example.com")


def test_expired_token_is_rejected(signer: TokenSigner) -> None:
    token = signer.sign(EMAIL, AUDIENCE, time.time() - 7200, lifetime=3600)
    with pytest.raises(jwt.ExpiredSignatureError):
        verify(signer, token)


def test_token_from_another_key_is_rejected(signer: TokenSigner) -> None:
    other = TokenSigner(generate_signing_key(), ISSUER)
    with pytest.raises(jwt.InvalidSignatureError):
        verify(signer, other.sign(EMAIL, AUDIENCE, time.time()))


def test_invalid_keys_and_arguments(signer: TokenSigner) -> None:
    with pytest.raises(ValueError):
        TokenSigner("not a pem", ISSUER)
    ec_pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    with pytest.raises(TypeError, match="RSA"):
        TokenSigner(ec_pem, ISSUER)
    with pytest.raises(ValueError):
        TokenSigner(generate_signing_key(), "")
    with pytest.raises(ValueError):
        signer.sign("", AUDIENCE, time.time())
    with pytest.raises(ValueError):
        signer.sign(EMAIL, "", time.time())
    with pytest.raises(ValueError):
        signer.sign(EMAIL, AUDIENCE, time.time(), lifetime=0)
