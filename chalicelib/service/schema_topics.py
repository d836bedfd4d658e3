"""A topic's schema: its settings checked when a topic is created or changed, attach and detach (AMS's verbs
for the same settings), and the check of every message on publish.

Publish reads the schema's revisions through a short per-process cache and each revision's compiled form
from the per-revision cache (core/schemas/compiled.py): no definition is parsed per message.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument, NotFound
from chalicelib.core.names import Name
from chalicelib.core.records import TopicRecord
from chalicelib.core.schemas.compiled import CompiledCache, conforming
from chalicelib.core.schemas.model import DELETED_SCHEMA, SchemaRevision, TopicSchema, parse_encoding
from chalicelib.core.wire.messages import NewMessage
from chalicelib.core.wire.models import SchemaSettings, Topic
from chalicelib.service.context import Context

SCHEMA_DELETED = "Schema associated with topic deleted."


def allowed_revisions(revisions: Sequence[SchemaRevision], settings: TopicSchema) -> list[SchemaRevision]:
    """The revisions (newest first) between the settings' first and last revision, both included; a bound
    naming a revision deleted since is open."""
    by_id = {r.revision_id: r for r in revisions}
    first = by_id.get(settings.first_revision_id)
    last = by_id.get(settings.last_revision_id)
    return [r for r in revisions
            if (first is None or r.created >= first.created) and (last is None or r.created <= last.created)]


class TopicSchemas:
    def __init__(self, ctx: Context, compiled: CompiledCache | None = None) -> None:
        self.ctx = ctx
        self.compiled = compiled or CompiledCache()

    # -- settings ----------------------------------------------------------------------------
    def checked(self, settings: SchemaSettings | None) -> SchemaSettings | None:
        """The settings as stored (the encoding by name), after checking the schema and revisions exist;
        settings without a schema remove it from the topic."""
        if settings is None or not settings.schema_:
            return None
        schema = names.parse(settings.schema_, "schemas")
        encoding = parse_encoding(settings.encoding)
        revisions = self.ctx.schemas.revisions(schema)
        if not revisions:
            raise NotFound("Schema could not be found")
        ids = {r.revision_id for r in revisions}
        for bound, what in ((settings.first_revision_id, "First"), (settings.last_revision_id, "Last")):
            if bound and bound not in ids:
                raise NotFound(f"{what} revision could not be found")
        topic_schema = TopicSchema(schema.path, encoding, settings.first_revision_id, settings.last_revision_id)
        if not allowed_revisions(revisions, topic_schema):
            raise InvalidArgument("The first revision must not be newer than the last revision")
        return settings.model_copy(update={"schema_": schema.path, "encoding": encoding.value})

    def attach(self, topic: Name, settings: SchemaSettings) -> Topic:
        """Give a topic a schema (AMS's attach); the same checks as creating a topic with these settings."""
        return self._set(topic, self.checked(settings))

    def detach(self, topic: Name) -> Topic:
        """Remove a topic's schema (AMS's detach): its messages are no longer checked."""
        return self._set(topic, None)

    def _set(self, topic: Name, settings: SchemaSettings | None) -> Topic:
        rec = self.ctx.resources.require_topic(topic)
        spec = rec.spec.model_copy(update={"schema_settings": settings})
        self.ctx.resources.put_topic(topic, TopicRecord(spec, rec.created))
        return spec

    # -- publish -----------------------------------------------------------------------------
    def conforming(self, topic: Topic, messages: Sequence[NewMessage]) -> Sequence[NewMessage]:
        """``messages`` unchanged for a topic without a schema; else each checked (INVALID_ARGUMENT naming the
        first failing message's index and why) and given the googclient_schema* attributes."""
        settings = topic.schema_settings
        if settings is None or not settings.schema_:
            return messages
        if settings.schema_ == DELETED_SCHEMA:
            raise NotFound(SCHEMA_DELETED)
        topic_schema = TopicSchema(settings.schema_, parse_encoding(settings.encoding),
                                   settings.first_revision_id, settings.last_revision_id)
        revisions = self.ctx.schemas.cached_revisions(names.parse(settings.schema_, "schemas"))
        if not revisions:
            raise NotFound(SCHEMA_DELETED)
        checkers = [(r, self.compiled.get(r)) for r in allowed_revisions(revisions, topic_schema)]
        if not checkers:
            raise NotFound(SCHEMA_DELETED)
        return conforming(checkers, topic_schema.encoding, messages)
