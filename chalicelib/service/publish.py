"""Publish: validate, store the request's bytes, enqueue it, then log one item.

A small request (its raw bytes at most METRO_LOG_INLINE_MAX_BYTES, a quarter of that when the stream
fans it out, and every body small enough to travel inline in the queue message) keeps its bytes in the
log item and has no S3 object: the log item's PutItem is its one durable write. Any other request is
stored as one S3 object first.

Direct fan-out (the default, for topics of up to METRO_DIRECT_FANOUT_MAX_SUBSCRIPTIONS
subscriptions): the S3 PutObject (if any) and the consistent Query for the topic's subscriptions run
concurrently, then every subscription queue gets its messages (all batches at once), then the log item
is written marked ``fanned``. When an enqueue fails, the item is written
unmarked and the stream's fan-out handler delivers the request (duplicates, never a loss), except when
it failed for an ordered subscription and the request has ordering keys: the stream would enqueue it
after later publishes of the same keys, so the publish fails (UNAVAILABLE) without its log item and the
client retries it. With direct fan-out off, publish only stores and logs, and the stream does all fan-out.

The publish is acknowledged only after the object (if any) and the log item are stored. A crash before
the log item is written leaves an object no log item points at, and possibly messages already
enqueued: an unacknowledged publish the client retries (at-least-once), never a lost one.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from chalicelib.core import ids, limits, live, payload
from chalicelib.core.errors import MetroError, Unavailable
from chalicelib.core.log_keys import log_shard
from chalicelib.core.names import Name
from chalicelib.core.records import LogEntry
from chalicelib.core.timefmt import format_timestamp_us, parse_duration
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.models import Topic
from chalicelib.core.wire.requests import PublishRequest
from chalicelib.core.wire.responses import PublishResponse
from chalicelib.observability import catalog, metrics
from chalicelib.service import transforms
from chalicelib.service.context import Context
from chalicelib.service.enqueue import enqueue
from chalicelib.service.schema_topics import TopicSchemas

log = logging.getLogger(__name__)

STREAM_ITEM_WRITES = 4  # writes of a log item the stream fans out: put, index put, fanned mark, index removal


class PublishService:
    def __init__(self, ctx: Context, schemas: TopicSchemas | None = None) -> None:
        self.ctx = ctx
        self.schemas = schemas or TopicSchemas(ctx)

    def publish(self, topic: Name, request: PublishRequest, request_id: str | None = None) -> PublishResponse:
        """Check the messages against the topic's schema, if it has one, then store them (as ``request_id``, when
        given: an import topic's ingestion publishes a batch again under the id it first chose)."""
        with metrics.operation(catalog.PUBLISH, topic=topic.path) as tally:
            spec = self.ctx.resources.cached_topic(topic).spec
            if spec.message_transforms:
                return self._transformed(topic, spec, request, request_id, tally)
            messages = self.schemas.conforming(spec, request.messages)
            ids = self.append(topic, messages, request_id)
            tally.messages = len(ids)
            return PublishResponse(tuple(ids))

    def _transformed(self, topic: Name, spec: Topic, request: PublishRequest, request_id: str | None,
                     tally: metrics.Tally) -> PublishResponse:
        """The topic's message transforms first, then its schema; a dropped message is not stored and gets an id
        of the request no stored message has (docs/transforms.md)."""
        now = self.ctx.clock()
        out = transforms.for_publish(self.ctx, spec.message_transforms, request.messages,
                                     transforms.seconds(format_timestamp_us(now)))
        kept = out.messages
        request_id = request_id or self.ctx.ids.request_id(now)
        stored = iter(self.append(topic, self.schemas.conforming(spec, kept), request_id) if kept else [])
        extra = iter(ids.message_id(request_id, len(kept) + j) for j in range(len(out.kept) - len(kept)))
        tally.messages = len(kept)
        return PublishResponse(tuple(next(stored) if m is not None else next(extra) for m in out.kept))

    def append(self, topic: Name, messages: Sequence[NewMessage], request_id: str | None = None) -> list[str]:
        """Store already validated messages as one publish request; returns their ids in order."""
        rec = self.ctx.resources.cached_topic(topic)
        now = self.ctx.clock()
        request_id = request_id or self.ctx.ids.request_id(now)
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
            shard=log_shard(request_id, any(m.ordering_key for m in stored)),
        )
        if not self.ctx.config.direct_fanout:
            self.ctx.log.append(self._placed(entry, blob, stored, streamed=True), blob)
        else:
            self._store_and_fan_out(entry, blob, body_start, stored)
        counts = {live.PUBLISHED: len(stored), live.BYTES: sum(len(m.data) for m in messages)}
        self.ctx.counters.add(topic, counts, now)
        return [m.message_id for m in stored]

    def _placed(self, entry: LogEntry, blob: bytes, stored: list[payload.StoredMessage], streamed: bool) -> LogEntry:
        """``entry`` logged with its bytes in the item when they are small enough, else as it is (an S3 object).
        The stream's fan-out writes an item four times over (put, unfanned index, mark, index removal), so a
        request left to it is kept in its item only up to a quarter of the limit
        (docs/decisions/log-inline-bodies.md)."""
        limit = self.ctx.config.log_inline_max_bytes // (STREAM_ITEM_WRITES if streamed else 1)
        if not payload.fits_log_item(blob, stored, limit, self.ctx.config.inline_max_bytes):
            return entry
        key = payload.raw_key(entry.topic, entry.request_id, entry.publish_time, inline=True)
        return dataclasses.replace(entry, key=key, inline=blob)

    def _store_and_fan_out(self, entry: LogEntry, blob: bytes, body_start: int,
                           stored: list[payload.StoredMessage]) -> None:
        subs = self.ctx.resources.start_topic_subscriptions(entry.topic)
        placed = self._placed(entry, blob, stored, streamed=False)
        self.ctx.log.put_object(placed, blob)  # nothing for a request its log item holds
        fanned, keyed = False, any(m.ordering_key for m in stored)
        try:
            live = subs.result()
            if len(live) > self.ctx.config.direct_fanout_max_subscriptions:
                # A wide topic would hold the publisher for many send rounds: the stream fans it out.
                self._log_for_stream(entry, placed, blob, stored)
                return
            header = payload.decode_header(blob[:body_start])
            _, failed = enqueue(self.ctx, placed, header, stored, live)
            fanned = not failed
            if failed:
                log.warning("publish %s: enqueue failed for %s; the stream fans it out", entry.request_id, failed)
            ordered_failed = keyed and any(s.spec.enable_message_ordering for s in live if s.name in failed)
        except MetroError as exc:
            log.warning("publish %s: direct fan-out failed (%s); the stream fans it out", entry.request_id, exc)
            ordered_failed = keyed
        if ordered_failed:
            # The stream would enqueue these messages after the next publish of their ordering keys, out of
            # order. Unanswered, the publish is retried by the client (Google's clients hold the key meanwhile),
            # as after a crash before the log item: messages already sent elsewhere come twice, none is lost.
            raise Unavailable("Enqueueing for an ordered subscription failed; retry the publish.")
        self.ctx.log.put_entry(dataclasses.replace(placed, fanned=fanned))

    def _log_for_stream(self, entry: LogEntry, placed: LogEntry, blob: bytes,
                        stored: list[payload.StoredMessage]) -> None:
        """Log a request the stream fans out: one ``placed`` in its item for direct fan-out but too large for the
        stream's limit gets its S3 object now."""
        streamed = self._placed(entry, blob, stored, streamed=True)
        if placed.logged_inline and not streamed.logged_inline:
            self.ctx.log.put_object(streamed, blob)
        self.ctx.log.put_entry(streamed)
