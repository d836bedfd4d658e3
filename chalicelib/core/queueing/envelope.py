"""The body of one SQS message in a subscription queue (written by fan-out and replay, read by pull/push).

Compact JSON: ``{"id": message id, "t": publish time, "a": attributes?, "k": ordering key?,
"d": base64 data}`` when the body travels inline, or ``{..., "s3": key, "o": offset, "n": length}``
when it stays in S3 and is read with a range GET at delivery time. Only :func:`decode` tells the two
apart (an attribute may be named ``d`` too); readers decode a queue body once and keep the envelope.

A pack (core/queueing/packs.py) is a JSON array of such objects: several messages in one SQS message.
``"r"`` counts the SQS receives a message had in an earlier queue message (a pack it was taken out of), so
that its delivery attempt carries on where it was.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Envelope:
    message_id: str
    publish_time: str
    attributes: dict[str, str] = field(default_factory=dict)
    ordering_key: str = ""
    data: bytes | None = None  # None when the body is in S3
    s3_key: str = ""
    offset: int = 0
    length: int = 0
    prior: int = 0  # receives in earlier queue messages (see the module's doc)

    @property
    def inline(self) -> bool:
        """Whether the body travels in the queue message (else it is read from S3 at delivery time)."""
        return self.data is not None

    @property
    def size(self) -> int:
        """Bytes delivered for this message: its data, inline or in S3 (never the queue body's length, which
        for an S3 pointer is a few hundred bytes whatever the message's size)."""
        return len(self.data) if self.data is not None else self.length


def encode(env: Envelope) -> str:
    return json.dumps(_fields(env), separators=(",", ":"), ensure_ascii=False)


def encode_pack(envs: list[Envelope]) -> str:
    """Several envelopes in one queue body."""
    return json.dumps([_fields(e) for e in envs], separators=(",", ":"), ensure_ascii=False)


def _fields(env: Envelope) -> dict[str, Any]:
    body: dict[str, Any] = {"id": env.message_id, "t": env.publish_time}
    if env.attributes:
        body["a"] = env.attributes
    if env.ordering_key:
        body["k"] = env.ordering_key
    if env.data is not None:
        body["d"] = base64.b64encode(env.data).decode()
    else:
        body.update({"s3": env.s3_key, "o": env.offset, "n": env.length})
    if env.prior:
        body["r"] = env.prior
    return body


def decode(text: str) -> Envelope:
    """One envelope; a pack is refused (ValueError): readers that meet packs use :func:`decode_all`."""
    body = json.loads(text)
    if not isinstance(body, dict):
        raise ValueError("a pack of envelopes, not one envelope")
    return _from_fields(body)


def decode_all(text: str) -> tuple[list[Envelope], bool]:
    """The envelopes of a queue body, and whether it is a pack (a single envelope: a list of one)."""
    body = json.loads(text)
    if isinstance(body, list):
        if not body:
            raise ValueError("an empty pack")
        return [_from_fields(b) for b in body], True
    return [_from_fields(body)], False


def _from_fields(body: dict[str, Any]) -> Envelope:
    data = base64.b64decode(body["d"]) if "d" in body else None
    return Envelope(
        message_id=body["id"],
        publish_time=body["t"],
        attributes=body.get("a", {}),
        ordering_key=body.get("k", ""),
        data=data,
        s3_key=body.get("s3", ""),
        offset=body.get("o", 0),
        length=body.get("n", 0),
        prior=int(body.get("r", 0)),
    )
