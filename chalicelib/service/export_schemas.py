"""``avroConfig.useTopicSchema``: an export file written with the topic's Avro schema (docs/export.md).

Each message is decoded with the schema revision it was published with (the ``googclient_schemarevisionid``
attribute publish adds; the newest revision the topic allows otherwise) in its encoding, and messages are grouped by
revision: one file holds one revision's records, its writer schema. A topic without an Avro schema (none, another
type, or deleted) writes the data as bytes, as Google does ("if it exists"). A message that does not decode is
returned apart: the writer treats it as a failed write (retried, then dead-lettered).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chalicelib.core import export_files, names
from chalicelib.core.names import DELETED_TOPIC
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.schemas.compiled import SCHEMA_ENCODING, SCHEMA_REVISION
from chalicelib.core.schemas.model import SchemaRevision, SchemaType, TopicSchema, parse_encoding
from chalicelib.service.context import Context
from chalicelib.service.schema_topics import allowed_revisions


@dataclass
class Group:
    """Messages of one file: the writer schema (None: bytes) and, with a schema, each message's record."""

    schema: dict[str, Any] | None
    indexes: list[int] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)


def grouped(ctx: Context, rec: SubscriptionRecord,
            messages: Sequence[export_files.Message]) -> tuple[list[Group], list[int]]:
    """The messages' files (by index into ``messages``) and the indexes of the ones that did not decode."""
    everything = Group(None, list(range(len(messages))))
    topic_name = rec.spec.topic
    if topic_name == DELETED_TOPIC:
        return [everything], []
    topic = ctx.resources.cached_topic(names.parse(topic_name, "topics")).spec
    settings = topic.schema_settings
    if settings is None or not settings.schema_:
        return [everything], []
    revisions = ctx.schemas.cached_revisions(names.parse(settings.schema_, "schemas"))
    allowed = allowed_revisions(revisions, TopicSchema(settings.schema_, parse_encoding(settings.encoding),
                                                       settings.first_revision_id, settings.last_revision_id))
    if not allowed or allowed[0].type != SchemaType.AVRO:
        return [everything], []
    by_id: dict[str, SchemaRevision] = {r.revision_id: r for r in revisions if r.type == SchemaType.AVRO}
    default_encoding = parse_encoding(settings.encoding).value
    groups: dict[str, Group] = {}
    failed: list[int] = []
    for i, m in enumerate(messages):
        revision = by_id.get(m.attributes.get(SCHEMA_REVISION, ""), allowed[0])
        try:
            record = export_files.decode_avro(revision.definition,
                                              m.attributes.get(SCHEMA_ENCODING, default_encoding), m.data)
        except ValueError:
            failed.append(i)
            continue
        group = groups.setdefault(revision.revision_id, Group(export_files.topic_schema(revision.definition)))
        group.indexes.append(i)
        group.records.append(record)
    return list(groups.values()), failed
