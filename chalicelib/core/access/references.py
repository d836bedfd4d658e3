"""Which request fields name a resource, and what a caller needs on that resource: declared on the typed
requests themselves (``Annotated[str, Refers(...)]``), so that a field cannot name a topic, subscription,
snapshot or schema without saying how it is authorized.

A request's URL names one resource, which api/permissions.py authorizes. A field of its body may name
another, possibly in another project: a subscription's topic, a dead-letter topic, a topic's schema, the
snapshot of a seek, the schema of ``validateMessage``. Each such field carries a ``Refers`` marker: the
collection it names and the action (core/access/identity.Action) the caller must hold on *that* resource, in *its*
own project. api/references.py finds the markers in a parsed request and authorizes each name before any
use case reads it, so the refusal is the same 403 whether the named resource exists or not.

A field that names something other than a resource says so with ``Checked``: the URL's own name (which
must match the URL), users of the project, or push identities, each checked where the marker says.
tests/unit/test_references.py fails for a name-like field without either marker, and the cross-project
matrix (tests/functional/test_tenancy.py) probes every ``Refers`` field of every route.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from chalicelib.core import names
from chalicelib.core.access.identity import Action
from chalicelib.core.names import DELETED_TOPIC, Name


@dataclass(frozen=True)
class Refers:
    """The field names a resource of ``collection``; the caller must be allowed ``action`` on it."""

    collection: str
    action: Action


@dataclass(frozen=True)
class Checked:
    """The field names something that is not authorized as a resource; ``how`` says where it is checked."""

    how: str


# The markers in use, so that the declarations read the same everywhere.
ATTACH_TO_TOPIC = Refers("topics", Action.PROJECT_ADMIN)  # Google's pubsub.topics.attachSubscription
PUBLISH_TO_TOPIC = Refers("topics", Action.PUBLISH)  # a dead-letter topic receives the subscription's messages
READ_SCHEMA = Refers("schemas", Action.PROJECT_MEMBER)  # as GET .../schemas/{s}
READ_SNAPSHOT = Refers("snapshots", Action.READ_SUBSCRIPTIONS)  # as GET .../snapshots/{s}
CONSUME_SUBSCRIPTION = Refers("subscriptions", Action.CONSUME)  # a snapshot copies a subscription's backlog
URL_NAME = Checked("must equal the resource the URL names (api/parsing.py, _same_name)")
OUTPUT_ONLY = Checked("output only: ignored on the way in")
PROJECT_USERS = Checked("users who are members of the URL's project (service/access.py, service/accounts.py)")
PUSH_IDENTITY = Checked("a push identity owned by the subscription's or URL's project (service/push_config.py)")
SERVICE_ADMIN_ONLY = Checked("only a service_admin may send it (api/permissions.py)")


@dataclass(frozen=True)
class Reference:
    """One resource a request names: where in the request (``field``, dotted), what, and the action needed."""

    field: str
    name: Name
    rule: Refers


def markers(cls: type) -> dict[str, tuple[object, ...]]:
    """Each field of a dataclass or pydantic model -> the markers (``Annotated`` metadata) it carries."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return {f: tuple(info.metadata) for f, info in cls.model_fields.items()}
    if not dataclasses.is_dataclass(cls):
        return {}
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: tuple(getattr(hints[f.name], "__metadata__", ())) for f in dataclasses.fields(cls)}


def _rule(metadata: tuple[object, ...]) -> Refers | None:
    return next((m for m in metadata if isinstance(m, Refers)), None)


def _children(value: object) -> Iterator[tuple[str, object, tuple[object, ...]]]:
    """The fields of a typed value with their markers; nothing for a plain value."""
    if isinstance(value, BaseModel) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        for field, metadata in markers(type(value)).items():
            yield field, getattr(value, field), metadata


def _named(value: object, rule: Refers) -> Iterator[Name]:
    if isinstance(value, Name):
        yield value
    elif isinstance(value, str) and value and value != DELETED_TOPIC:
        yield names.parse(value, rule.collection)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _named(item, rule)


def references(value: object, prefix: str = "") -> Iterator[Reference]:
    """Every resource named by a parsed request, nested models and tuples included (empty fields name none).

    A malformed name is INVALID_ARGUMENT here, as it would be in the use case."""
    for field, child, metadata in _children(value):
        path = f"{prefix}{field}"
        rule = _rule(metadata)
        if rule is not None:
            yield from (Reference(path, name, rule) for name in _named(child, rule))
        if metadata:  # declared: a Refers was taken above, a Checked is checked where it says
            continue
        items: Any = child if isinstance(child, (tuple, list)) else (child,)
        for item in items:
            yield from references(item, path + ".")
