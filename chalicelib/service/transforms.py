"""Single message transforms at create, at publish and at delivery (docs/transforms.md).

The JavaScript runs in the engine of chalicelib/core/transforms.py: deployed in the transform function, locally in
this process (chalicelib/store/transformer.py). One batch (the transforms and every message of a publish request or
of a delivery) is one run. A resource without enabled transforms never reaches this module's runs.

* :func:`check` validates a topic's or a subscription's transforms at create and update (Google's limits, syntax,
  the function present): INVALID_ARGUMENT.
* :func:`for_publish`: a topic's transforms over a publish request's messages, before its schema check; a message
  a transform fails on refuses the request (INVALID_ARGUMENT with the error).
* :func:`for_delivery`: a subscription's transforms over received deliveries: kept (rewritten in place), dropped
  (the caller settles them as acknowledged) and failed (the caller sends them down the dead-letter path). The pull,
  StreamingPull, push and export deliveries call it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.transforms import Message, Udf
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.transforms import MessageTransform
from chalicelib.service.context import Context
from chalicelib.service.delivery import Delivery

Batch = dict[str, Any]
log = logging.getLogger(__name__)

def active(transforms: Sequence[MessageTransform]) -> list[Udf]:
    """The transforms that run, in order: the ones with a JavaScript UDF and not disabled."""
    return [Udf(t.javascript_udf.function_name, t.javascript_udf.code) for t in transforms
            if t.javascript_udf is not None and not t.disabled]


# -- the batch: what the transform function takes and answers -------------------------------------------------
def batch(udfs: Sequence[Udf], messages: Sequence[Message]) -> Batch:
    return {"transforms": [{"javascriptUdf": {"functionName": u.function_name, "code": u.code}} for u in udfs],
            "messages": [{"data": base64.b64encode(m.data).decode(), "attributes": m.attributes,
                          "messageId": m.message_id, "publishTime": m.publish_time, "orderingKey": m.ordering_key}
                         for m in messages]}


def _run(ctx: Context, udfs: Sequence[Udf], messages: Sequence[Message]) -> list[dict[str, Any]]:
    answer = ctx.transformer.run(batch(udfs, messages))
    if "invalid" in answer:
        raise InvalidArgument(str(answer["invalid"]))
    results: list[dict[str, Any]] = answer["results"]
    return results


# -- create and update --------------------------------------------------------------------------------------
def check(ctx: Context, transforms: Sequence[MessageTransform]) -> None:
    """Google's limits, then each UDF compiled (disabled ones too: they may be enabled by an update)."""
    if len(transforms) > limits.MAX_MESSAGE_TRANSFORMS:
        raise InvalidArgument(f"A resource may have at most {limits.MAX_MESSAGE_TRANSFORMS} message transforms.")
    udfs: list[Udf] = []
    for i, t in enumerate(transforms):
        udf = t.javascript_udf
        if udf is None:
            raise InvalidArgument(f"message_transforms[{i}] names no transform (javascriptUdf).")
        if not udf.function_name:
            raise InvalidArgument(f"message_transforms[{i}].javascript_udf.function_name is required.")
        if not udf.code.strip():
            raise InvalidArgument(f"message_transforms[{i}].javascript_udf.code is required.")
        if len(udf.code.encode()) > limits.MAX_UDF_CODE_BYTES:
            raise InvalidArgument(f"message_transforms[{i}].javascript_udf.code is larger than "
                                  f"{limits.MAX_UDF_CODE_BYTES} bytes.")
        udfs.append(Udf(udf.function_name, udf.code))
    if udfs:
        _run(ctx, udfs, [])


# -- publish ------------------------------------------------------------------------------------------------
@dataclass
class Published:
    """A publish request's messages after the topic's transforms: ``kept[i]`` is None for a dropped message."""

    kept: list[NewMessage | None] = field(default_factory=list)

    @property
    def messages(self) -> list[NewMessage]:
        return [m for m in self.kept if m is not None]


def for_publish(ctx: Context, transforms: Sequence[MessageTransform], messages: Sequence[NewMessage],
                publish_time: str) -> Published:
    """The topic's enabled transforms over ``messages`` (message_id is not assigned yet: empty)."""
    udfs = active(transforms)
    if not udfs:
        return Published(list(messages))
    results = _run(ctx, udfs, [Message(m.data, m.attributes, "", publish_time, m.ordering_key) for m in messages])
    out = Published()
    for i, (m, r) in enumerate(zip(messages, results, strict=True)):
        if "error" in r:
            raise InvalidArgument(f"A message transform failed on message {i} of the request: {r['error']}")
        out.kept.append(None if r.get("dropped") else
                        NewMessage(base64.b64decode(r["data"]), dict(r["attributes"]), m.ordering_key))
    return out


# -- delivery -----------------------------------------------------------------------------------------------
@dataclass
class Delivered:
    """Deliveries after the subscription's transforms (the kept ones rewritten in place)."""

    kept: list[Delivery] = field(default_factory=list)
    dropped: list[Delivery] = field(default_factory=list)  # settle as acknowledged
    failed: list[tuple[Delivery, str]] = field(default_factory=list)  # the dead-letter path, with the error


def for_delivery(ctx: Context, rec: SubscriptionRecord, deliveries: Sequence[Delivery]) -> Delivered:
    """The subscription's enabled transforms over deliveries whose bodies are fetched (``data`` set)."""
    udfs = active(rec.spec.message_transforms)
    todo = [d for d in deliveries if d.env is not None and d.data is not None]
    if not udfs or not todo:
        return Delivered(list(deliveries))
    results = _run(ctx, udfs, [_message(d) for d in todo])
    out = Delivered([d for d in deliveries if d.env is None or d.data is None])
    for d, r in zip(todo, results, strict=True):
        if "error" in r:
            out.failed.append((d, str(r["error"])))
        elif r.get("dropped"):
            out.dropped.append(d)
        else:
            assert d.env is not None
            d.data = base64.b64decode(r["data"])
            d.env = replace(d.env, attributes=dict(r["attributes"]))
            out.kept.append(d)
    order = {id(d): i for i, d in enumerate(deliveries)}
    out.kept.sort(key=lambda d: order[id(d)])
    return out


def _message(d: Delivery) -> Message:
    env = d.env
    assert env is not None and d.data is not None
    return Message(d.data, dict(env.attributes), env.message_id, seconds(env.publish_time), env.ordering_key)


def seconds(publish_time: str) -> str:
    """Google's metadata format, YYYY-MM-DDTHH:MM:SSZ (the stored time has microseconds)."""
    return publish_time[:19] + "Z" if len(publish_time) >= 19 else publish_time


def failures(rec: SubscriptionRecord, shaped: Delivered) -> list[Delivery]:
    """The deliveries a transform failed on, each logged with its error (their path is the caller's: the
    dead-letter topic, or a nack)."""
    for d, error in shaped.failed:
        log.warning("a message transform of %s failed on message %s: %s", rec.name, d.message_id, error)
    return [d for d, _ in shaped.failed]
