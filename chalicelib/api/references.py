"""Authorization of the resources a request body names (core/access/references.py declares them on the typed
requests): each is authorized against its own project, with the action its declaration names, before any
use case reads it. The answer is the same 403 whether the named resource exists or not.

Handlers call ``authorized(incoming, request)`` on every parsed request that can name a resource, and
``authorize_name`` where a dialect resolves a name before building a typed request (AMS's topic schema).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from chalicelib.core.access.references import Reference, Refers, references
from chalicelib.core.names import Name
from chalicelib.runtime import services

if TYPE_CHECKING:  # api/handlers.py imports this module
    from chalicelib.api.handlers import Incoming

T = TypeVar("T")


def authorize_reference(incoming: Incoming, reference: Reference) -> None:
    services().access.authorize(incoming.principal, reference.rule.action, reference.name.project, reference.name)


def authorized(incoming: Incoming, request: T) -> T:
    """``request`` once every resource it names is authorized for the caller; PERMISSION_DENIED otherwise."""
    for reference in references(request):
        authorize_reference(incoming, reference)
    return request


def authorize_name(incoming: Incoming, field: str, name: Name, rule: Refers) -> Name:
    authorize_reference(incoming, Reference(field, name, rule))
    return name
