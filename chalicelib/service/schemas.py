"""Schema resources: create, get, list, commit, rollback, list and delete revisions, delete, and the two
validation methods. Every method takes typed values (core/schemas/model.py) and returns them, so both API
dialects (Google's and AMS's) call the same use cases.

Revisions are immutable; the head is the newest. A schema that topics use can be deleted: those topics of its
project point at ``_deleted-schema_`` afterwards and refuse publishes (Google's behaviour); topics elsewhere
find the schema gone at publish time and refuse the same way.
"""

from __future__ import annotations

import uuid

from chalicelib.core import names
from chalicelib.core.errors import FailedPrecondition, InvalidArgument, NotFound
from chalicelib.core.names import Name
from chalicelib.core.records import TopicRecord
from chalicelib.core.schemas.compiled import CompiledCache, check_message, compile_spec
from chalicelib.core.schemas.model import (
    DELETED_SCHEMA,
    SchemaRecord,
    SchemaRevision,
    SchemaSpec,
    ValidateMessageRequest,
)
from chalicelib.core.timefmt import format_timestamp_us
from chalicelib.core.wire.pagetokens import PageTokens
from chalicelib.core.wire.requests import PageRequest
from chalicelib.core.wire.responses import Page
from chalicelib.service.context import Context

MAX_REVISIONS = 20  # Google's limit on the revisions a schema holds at a time


class SchemaService:
    def __init__(self, ctx: Context, compiled: CompiledCache | None = None) -> None:
        self.ctx = ctx
        self.store = ctx.schemas
        self.compiled = compiled or CompiledCache()

    # -- schemas -----------------------------------------------------------------------------
    def create(self, name: Name, spec: SchemaSpec) -> SchemaRecord:
        """A new schema with its first revision; ALREADY_EXISTS when the name is taken."""
        compile_spec(spec)
        record = SchemaRecord(self._new_revision(name, spec), str(uuid.uuid4()))
        self.store.create(name, record)
        return record

    def get(self, name: Name, revision_id: str = "") -> SchemaRevision:
        """The newest revision, or the one named."""
        record = self.record(name)
        if not revision_id:
            return record.head
        revision = self.store.revision(name, revision_id, record.uuid)
        if revision is None:
            raise NotFound("Schema revision not found")
        return revision

    def record(self, name: Name) -> SchemaRecord:
        record = self.store.get(name)
        if record is None:
            raise NotFound("Schema not found")
        return record

    def list(self, project: str, page: PageRequest) -> Page[SchemaRecord]:
        records, nxt = self.store.page(names.check_project(project), page.size, page.token)
        return Page("schemas", tuple(records), nxt)

    def delete(self, name: Name) -> None:
        self.store.delete(name)
        self._unlink_topics(name)

    # -- revisions ---------------------------------------------------------------------------
    def commit(self, name: Name, spec: SchemaSpec) -> SchemaRevision:
        """A new revision that becomes the head; its type must be the schema's."""
        record = self.record(name)
        head = record.head
        if spec.type is not head.type:
            raise InvalidArgument(f"The schema's type is {head.type.value}; a revision cannot change it")
        compile_spec(spec)
        self._check_room(name)
        revision = self._new_revision(name, spec, after=head)
        self.store.commit(name, revision, record.uuid)
        return revision

    def rollback(self, name: Name, revision_id: str) -> SchemaRevision:
        """A new revision with the definition of an earlier one."""
        if not revision_id:
            raise InvalidArgument("A revision id is required")
        record = self.record(name)
        old = self.store.revision(name, revision_id, record.uuid)
        if old is None:
            raise NotFound("Revision not found")
        self._check_room(name)
        revision = self._new_revision(name, old.spec, after=record.head)
        self.store.commit(name, revision, record.uuid)
        return revision

    def list_revisions(self, name: Name, page: PageRequest) -> Page[SchemaRevision]:
        """Revisions, newest first, paged by a signed token."""
        revisions = self.store.revisions(name)
        if not revisions:
            raise NotFound("Schema not found")
        tokens, scope = PageTokens(self.ctx.config.ack_secret), f"revisions\n{name.path}"
        start = 0
        position = tokens.decode(scope, page.token)
        if position is not None:
            after = position.get("after", "")
            ids = [r.revision_id for r in revisions]
            start = ids.index(after) + 1 if after in ids else 0
        chunk = revisions[start:start + page.size] if page.size else revisions[start:]
        more = start + len(chunk) < len(revisions)
        nxt = tokens.encode(scope, {"after": chunk[-1].revision_id}) if more and chunk else ""
        return Page("schemas", tuple(chunk), nxt)

    def delete_revision(self, name: Name, revision_id: str) -> SchemaRevision:
        """Remove one revision (never the only one: that is deleting the schema); returns it."""
        if not revision_id:
            raise InvalidArgument("A revision id is required")
        revisions = self.store.revisions(name)
        if not revisions:
            raise NotFound("Schema not found")
        found = [r for r in revisions if r.revision_id == revision_id]
        if not found:
            raise NotFound("Schema revision not found")
        if len(revisions) == 1:
            raise InvalidArgument("Cannot delete last revision. Please use DeleteSchema.")
        rest = [r for r in revisions if r.revision_id != revision_id]
        new_head = rest[0] if revisions[0].revision_id == revision_id else None
        self.store.delete_revision(name, revision_id, new_head)
        return found[0]

    # -- validation --------------------------------------------------------------------------
    def validate_schema(self, project: str, spec: SchemaSpec) -> None:
        """INVALID_ARGUMENT naming what is wrong when ``spec`` does not compile."""
        names.check_project(project)
        compile_spec(spec)

    def validate_message(self, project: str, request: ValidateMessageRequest) -> None:
        """INVALID_ARGUMENT with the reason when the message does not conform to the schema given by name
        (its newest revision, or ``name@revision``) or inline."""
        names.check_project(project)
        if request.spec is not None:
            checker = compile_spec(request.spec)
        elif request.schema is not None:
            checker = self.compiled.get(self.get(request.schema, request.revision_id))
        else:
            raise InvalidArgument("Either a schema name or a schema is required")
        check_message(checker, request.message, request.encoding)

    # -- helpers -----------------------------------------------------------------------------
    def _check_room(self, name: Name) -> None:
        if len(self.store.revisions(name)) >= MAX_REVISIONS:
            raise FailedPrecondition(f"A schema can have at most {MAX_REVISIONS} revisions; delete one first.")

    def _new_revision(self, name: Name, spec: SchemaSpec, after: SchemaRevision | None = None) -> SchemaRevision:
        """A revision created now, and in any case after ``after`` (revisions are ordered by creation time)."""
        now = self.ctx.clock()
        if after is not None:
            now = max(now, after.created + 1e-6)
        return SchemaRevision(name.path, spec.type, spec.definition, self.ctx.ids.token()[:8],
                              format_timestamp_us(now), now)

    def _unlink_topics(self, name: Name) -> None:
        """The schema's project's topics that used it now name ``_deleted-schema_``."""
        token = ""
        while True:
            topics, token = self.ctx.resources.list_topics(name.project, 100, token)
            for rec in topics:
                settings = rec.spec.schema_settings
                if settings is None or settings.schema_ != name.path:
                    continue
                spec = rec.spec.model_copy(update={
                    "schema_settings": settings.model_copy(update={"schema_": DELETED_SCHEMA})})
                try:
                    self.ctx.resources.put_topic(names.parse(rec.spec.name, "topics"), TopicRecord(spec, rec.created))
                except NotFound:
                    continue
            if not token:
                return

