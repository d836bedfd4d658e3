"""Publish: validate, store the request as one S3 object, enqueue it, then log one metadata item.

Direct fan-out (the default, for topics of up to METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS
subscriptions): the S3 PutObject and the consistent Query for the topic's
subscriptions run concurrently, then every subscription queue gets its messages (all batches at
once), then the log item is written marked ``fanned``. When an enqueue fails, the item is written
unmarked and the stream's fan-out handler delivers the request (duplicates, never a loss). With
direct fan-out off, publish only stores and logs, and the stream does all fan-out.

The publish is acknowledged only after the object and the log item are stored. A crash before
the log item is written leaves an object no log item points at, and possibly messages already
enqueued: an unacknowledged publish the client retries (at-least-once), never a lost one.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from chalicelib.core import ids, limits, live, payload
from chalicelib.core.errors import MetroError
from chalicelib.core.names import Name
from chalicelib.core.records import LogEntry
from chalicelib.core.timefmt import format_timestamp_us, parse_duration
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.requests import PublishRequest
from chalicelib.core.wire.responses import PublishResponse
from chalicelib.observability import catalog, metrics
from chalicelib.service.context import Context
from chalicelib.service.enqueue import enqueue
from chalicelib.service.schema_topics import TopicSchemas

log = logging.getLogger(__name__)


class PublishService:
    def __init__(self, ctx: Context, schemas: TopicSchemas | None = None) -> None:
        self.ctx = ctx
        self.schemas = schemas or TopicSchemas(ctx)

    def publish(self, topic: Name, request: PublishRequest) -> PublishResponse:
        """Check the messages against the topic's schema, if it has one, then store them."""
        with metrics.operation(catalog.PUBLISH, topic=topic.path) as tally:
            messages = self.schemas.conforming(self.ctx.resources.cached_topic(topic).spec, request.messages)
            ids = self.append(topic, messages)
            tally.messages = len(ids)
            return PublishResponse(tuple(ids))

    def append(self, topic: Name, messages: Sequence[NewMessage]) -> list[str]:
        """Store already validated messages as one publish request; returns their ids in order."""
        rec = self.ctx.resources.cached_topic(topic)
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
        if not self.ctx.config.direct_fanout:
            self.ctx.log.append(entry, blob)
        else:
            self._store_and_fan_out(entry, blob, body_start, stored)
        counts = {live.PUBLISHED: len(stored), live.BYTES: sum(len(m.data) for m in messages)}
        self.ctx.counters.add(topic, counts, now)
        return [m.message_id for m in stored]

    def _store_and_fan_out(self, entry: LogEntry, blob: bytes, body_start: int,
                           stored: list[payload.StoredMessage]) -> None:
        subs = self.ctx.resources.start_topic_subscriptions(entry.topic)
        self.ctx.log.put_object(entry, blob)
        fanned = False
        try:
            live = subs.result()
            if len(live) > self.ctx.config.direct_fanout_max_subscriptions:
                # A wide topic would hold the publisher for many send rounds: the stream fans it out.
                self.ctx.log.put_entry(entry)
                return
            header = payload.decode_header(blob[:body_start])
            _, failed = enqueue(self.ctx, entry, header, stored, live)
            fanned = not failed
            if failed:
                log.warning("publish %s: enqueue failed for %s; the stream fans it out", entry.request_id, failed)
        except MetroError as exc:
            log.warning("publish %s: direct fan-out failed (%s); the stream fans it out", entry.request_id, exc)
        self.ctx.log.put_entry(dataclasses.replace(entry, fanned=fanned))
