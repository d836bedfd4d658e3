"""Google's schema methods, one function each: parse (api/schema_requests.py), call the schema use cases
(service/schemas.py), return typed results. ``METHODS`` declares each (api/methods.py)."""

from __future__ import annotations

from collections.abc import Callable

from chalicelib.api import parsing
from chalicelib.api import permissions as P
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.methods import Method
from chalicelib.api.references import authorized
from chalicelib.api.schema_requests import (
    SchemaRef,
    create_request,
    delete_revision_request,
    rollback_request,
    validate_message_request,
    view,
    wrapped_schema,
)
from chalicelib.core.schemas.model import ShownSchema, View
from chalicelib.core.wire.responses import EMPTY
from chalicelib.runtime import services

SchemaHandler = Callable[[SchemaRef, Incoming], Result]
ProjectHandler = Callable[[str, Incoming], Result]


# -- projects/{p}/schemas -----------------------------------------------------------------------------
def create_schema(project: str, incoming: Incoming) -> Result:
    name, spec = create_request(incoming.body, incoming.params, project)
    return services().schemas.create(name, spec).head


def list_schemas(project: str, incoming: Incoming) -> Result:
    shown = view(incoming.params, View.BASIC)
    page = services().schemas.list(project, parsing.page_request(incoming.params))
    return page.map(lambda record: ShownSchema(record.head, shown))


def validate_schema(project: str, incoming: Incoming) -> Result:
    services().schemas.validate_schema(project, wrapped_schema(incoming.body))
    return EMPTY


def validate_message(project: str, incoming: Incoming) -> Result:
    services().schemas.validate_message(project, authorized(incoming, validate_message_request(incoming.body)))
    return EMPTY


# -- projects/{p}/schemas/{s} -------------------------------------------------------------------------
def get_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    return ShownSchema(services().schemas.get(ref.name, ref.revision_id), view(incoming.params, View.FULL))


def delete_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    if ref.revision_id:  # DELETE projects/p/schemas/s@rev: the older spelling of :deleteRevision
        return services().schemas.delete_revision(ref.name, ref.revision_id)
    services().schemas.delete(ref.name)
    return EMPTY


def commit_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    return services().schemas.commit(ref.name, wrapped_schema(incoming.body))


def rollback_schema(ref: SchemaRef, incoming: Incoming) -> Result:
    return services().schemas.rollback(ref.name, rollback_request(incoming.body))


def list_revisions(ref: SchemaRef, incoming: Incoming) -> Result:
    shown = view(incoming.params, View.BASIC)
    page = services().schemas.list_revisions(ref.name, parsing.page_request(incoming.params))
    return page.map(lambda revision: ShownSchema(revision, shown))


def delete_revision(ref: SchemaRef, incoming: Incoming) -> Result:
    return services().schemas.delete_revision(ref.name, ref.revision_id or delete_revision_request(incoming.params))


TAG, PAGE = "schemas", ("pageSize", "pageToken")
METHODS: tuple[Method, ...] = (
    Method(P.SCHEMAS, "POST", "", create_schema, P.PROJECT_ADMIN, "Create a schema with its first revision",
           "Schema", body="SchemaRequest", query=("schemaId",), required=("schemaId",), tag=TAG),
    Method(P.SCHEMAS, "GET", "", list_schemas, P.PROJECT_MEMBER,
           "List the project's schemas (view BASIC by default: no definition)", "ListSchemasResponse",
           query=(*PAGE, "view"), tag=TAG),
    Method(P.SCHEMA, "GET", "", get_schema, P.PROJECT_MEMBER,
           "Get a schema (its newest revision, or the one named by id@revision)", "Schema", query=("view",), tag=TAG),
    Method(P.SCHEMA, "DELETE", "", delete_schema, P.PROJECT_ADMIN,
           "Delete a schema ({}); with id@revision, delete that revision and answer it", "DeletedSchema", tag=TAG),
    Method(P.SCHEMA, "POST", "commit", commit_schema, P.PROJECT_ADMIN, "Commit a new revision (of the schema's type)",
           "Schema", body="CommitSchemaRequest", tag=TAG),
    Method(P.SCHEMA, "POST", "rollback", rollback_schema, P.PROJECT_ADMIN,
           "A new revision with the definition of an earlier one", "Schema", body="RollbackSchemaRequest", tag=TAG),
    Method(P.SCHEMA, "GET", "listRevisions", list_revisions, P.PROJECT_MEMBER, "A schema's revisions, newest first",
           "ListSchemaRevisionsResponse", query=(*PAGE, "view"), tag=TAG),
    Method(P.SCHEMA, "DELETE", "deleteRevision", delete_revision, P.PROJECT_ADMIN,
           "Delete one revision (never the only one) and answer it", "Schema", query=("revisionId",), tag=TAG),
    Method(P.PROJECT_COLLECTION_VERB, "POST", "validate", validate_schema, P.PROJECT_MEMBER,
           "Check a schema definition without creating it", body="ValidateSchemaRequest",
           path="/v1/projects/{project}/schemas:validate", tag=TAG),
    Method(P.PROJECT_COLLECTION_VERB, "POST", "validateMessage", validate_message, P.PROJECT_MEMBER,
           "Check a message against a stored schema (by name) or an inline one", body="ValidateMessageRequest",
           path="/v1/projects/{project}/schemas:validateMessage", tag=TAG),
)
