"""Google's schema methods, one function each: parse (api/schema_requests.py), call the schema use cases
(service/schemas.py), return typed results. The route tables map (HTTP method, verb) to these functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from chalicelib.api import requests
from chalicelib.api.handlers import Incoming, Result
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
from chalicelib.core.responses import EMPTY
from chalicelib.core.schemas.model import ShownSchema, View
from chalicelib.runtime import services

SchemaHandler = Callable[[SchemaRef, Incoming], Result]
ProjectHandler = Callable[[str, Incoming], Result]


# -- projects/{p}/schemas -----------------------------------------------------------------------------
def create_schema(project: str, incoming: Incoming) -> Result:
    name, spec = create_request(incoming.body, incoming.params, project)
    return services().schemas.create(name, spec).head


def list_schemas(project: str, incoming: Incoming) -> Result:
    shown = view(incoming.params, View.BASIC)
    page = services().schemas.list(project, requests.page_request(incoming.params))
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
    page = services().schemas.list_revisions(ref.name, requests.page_request(incoming.params))
    return page.map(lambda revision: ShownSchema(revision, shown))


def delete_revision(ref: SchemaRef, incoming: Incoming) -> Result:
    return services().schemas.delete_revision(ref.name, ref.revision_id or delete_revision_request(incoming.params))


SCHEMAS: Mapping[tuple[str, str], ProjectHandler] = {
    ("POST", ""): create_schema,
    ("GET", ""): list_schemas,
}
SCHEMAS_VERBS: Mapping[tuple[str, str], ProjectHandler] = {  # projects/{p}/schemas:{verb}
    ("POST", "validate"): validate_schema,
    ("POST", "validateMessage"): validate_message,
}
SCHEMA: Mapping[tuple[str, str], SchemaHandler] = {
    ("GET", ""): get_schema,
    ("DELETE", ""): delete_schema,
    ("POST", "commit"): commit_schema,
    ("POST", "rollback"): rollback_schema,
    ("GET", "listRevisions"): list_revisions,
    ("DELETE", "deleteRevision"): delete_revision,
}
