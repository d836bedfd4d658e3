"""Publish: validate, store the request as one S3 object, then log one metadata item.

The publish is acknowledged only after both writes succeed. A crash between them leaves an
object that no log item points at (never delivered, removed by retention); it never loses an
acknowledged message.
"""

from __future__ import annotations

from typing import Any

from chalicelib.core import ids, limits, payload
from chalicelib.core.messages import NewMessage, parse_publish
from chalicelib.core.names import Name
from chalicelib.core.timefmt import format_timestamp_us, parse_duration
from chalicelib.service.context import Context
from chalicelib.store.log import LogEntry


class PublishService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def publish(self, topic: Name, body: Any) -> dict[str, Any]:
        messages = parse_publish(body)
        return {"messageIds": self.append(topic, messages)}

    def append(self, topic: Name, messages: list[NewMessage]) -> list[str]:
        """Store already validated messages as one publish request; returns their ids in order."""
        rec = self.ctx.resources.require_topic(topic)
        now = self.ctx.clock()
        request_id = self.ctx.ids.request_id(now)
        publish_time = format_timestamp_us(now)
        stored = [
            payload.StoredMessage(ids.message_id(request_id, i), m.data, m.attributes, m.ordering_key)
            for i, m in enumerate(messages)
        ]
        blob, body_start = payload.encode(topic.path, request_id, publish_time, stored)
        # Raw objects must outlive every subscription backlog that may still point at them.
        retention = rec.spec.message_retention_duration
        keep = max(parse_duration(retention, "retention") if retention else 0.0, float(limits.RETENTION_DEFAULT))
        entry = LogEntry(
            topic=topic.path,
            request_id=request_id,
            key=payload.raw_key(topic.path, request_id, publish_time),
            body_start=body_start,
            count=len(stored),
            size=len(blob) - body_start,
            publish_time=publish_time,
            expires=int(now + keep),
        )
        self.ctx.log.append(entry, blob)
        return [m.message_id for m in stored]
