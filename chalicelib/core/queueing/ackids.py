"""Opaque, tamper-proof, stateless ack ids.

An ack id carries everything an ack or modifyAckDeadline needs (the SQS receipt handle, the
lease it belongs to, the message id, and for a message of a pack its place in it: core/queueing/packs.py)
and an HMAC-SHA256 over it with Metro's configured secret,
so any API instance accepts any ack id without a lookup, and a forged or edited one is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass

from chalicelib.core.errors import InvalidArgument

_VERSION = 1
_MAC_BYTES = 16


@dataclass(frozen=True)
class AckId:
    subscription: str
    lease_id: str
    message_id: str
    receipt: str
    queue_gen: int = 0
    attempt: int = 1  # delivery attempt of this delivery (SQS receive count)
    pack: str = ""  # a pack's SQS message id ("": the queue message holds this message alone)
    index: int = 0  # the message's place in the pack
    size: int = 1  # messages in the pack
    handed: int = 1  # messages of the pack handed out by the same delivery
    kept: int = 0  # ordered: a bit per message of the pack that delivery holds, when it left others open


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class AckIdCodec:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()[:_MAC_BYTES]

    def encode(self, ack: AckId) -> str:
        fields: list[object] = [_VERSION, ack.subscription, ack.lease_id, ack.message_id, ack.receipt, ack.queue_gen,
                                ack.attempt]
        if ack.pack:
            fields += [ack.pack, ack.index, ack.size, ack.handed] + ([ack.kept] if ack.kept else [])
        payload = json.dumps(fields, separators=(",", ":")).encode()
        return _b64(payload) + "." + _b64(self._mac(payload))

    def decode(self, text: object, subscription: str) -> AckId:
        """Verify and open an ack id; it must belong to ``subscription``."""
        try:
            assert isinstance(text, str)
            body, mac = text.split(".")
            payload = _unb64(body)
            if not hmac.compare_digest(_unb64(mac), self._mac(payload)):
                raise ValueError("bad mac")
            fields = json.loads(payload)
            version, sub, lease_id, mid, receipt, gen, attempt = fields[:7]
            pack, index, size, handed, kept = [*fields[7:], 0][:5] if len(fields) > 7 else ("", 0, 1, 1, 0)
            if version != _VERSION:
                raise ValueError("version")
        except Exception as exc:  # any malformed or forged id is the caller's error
            raise InvalidArgument(f"Invalid ack ID: {str(text)[:64]!r}") from exc
        if sub != subscription:
            raise InvalidArgument(f"Ack ID {str(text)[:32]}... does not belong to subscription {subscription}")
        return AckId(sub, lease_id, mid, receipt, gen, attempt, pack, index, size, handed, kept)
