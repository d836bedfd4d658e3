"""``GET /v1/jwks`` and ``GET /.well-known/jwks.json``: the public keys that verify push tokens."""

from __future__ import annotations

import json

from chalice.app import Response

from chalicelib.api.http import guarded
from chalicelib.runtime import services
from chalicelib.service.push_config import token_signer


def jwks() -> Response:
    def run() -> Response:
        signer = token_signer(services().ctx.config)  # deployed, the key is a secret from SSM, not the environment
        body = signer.jwks() if signer is not None else {"keys": []}
        return Response(body=json.dumps(body, separators=(",", ":")), status_code=200,
                        headers={"Content-Type": "application/json", "Cache-Control": "public, max-age=300"})

    return guarded(run)
