"""Every API method of Metro, gathered from the modules that serve them (each ends with its ``METHODS``,
api/methods.py), and the tables derived from them:

- ``ROUTES``: every route template with the HTTP methods it answers (app.py registers each once);
- ``table(route)``: (HTTP method, verb) -> handler, what api/routes.py dispatches on;
- ``PERMISSIONS`` and ``rule_for``: the permission table api/routes.py authorizes from;
- the OpenAPI description (api/openapi/description.py) is built from ``METHODS`` too.

A (route, method, verb) declared twice is an error at import, so each table has exactly one entry per method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalice.app import Request, Response

from chalicelib.api import (
    account_handlers,
    handlers,
    jwks,
    operations,
    schema_handlers,
    snapshot_handlers,
)
from chalicelib.api import permissions as P
from chalicelib.api.ams import handlers as ams_handlers
from chalicelib.api.ams import schema_handlers as ams_schema_handlers
from chalicelib.api.console import METHODS as CONSOLE
from chalicelib.api.methods import Method
from chalicelib.api.openapi import page as openapi_page
from chalicelib.api.permissions import Rule


# -- the public routes: no token; each handler takes the request ---------------------------------------------------
def root(request: Request) -> Response:
    return operations.root(request)


def keys(request: Request) -> Response:
    return jwks.jwks()


def openapi_json(request: Request) -> Response:
    return openapi_page.spec(METHODS)


def openapi_docs(request: Request) -> Response:
    return openapi_page.docs(METHODS)


PUBLIC: tuple[Method, ...] = (
    Method(P.ROOT, "GET", "", root, P.PUBLIC, "Metro's name, version and ports, and where this description is",
           "Root", tag="service"),
    Method(P.JWKS, "GET", "", keys, P.PUBLIC, "The keys that verify Metro's push tokens", "Jwks", tag="service"),
    Method(P.JWKS_WELL_KNOWN, "GET", "", keys, P.PUBLIC, "The keys that verify Metro's push tokens", "Jwks",
           tag="service"),
    Method(P.OPENAPI, "GET", "", openapi_json, P.PUBLIC, "This description", "OpenApi", tag="service"),
    Method(P.DOCS, "GET", "", openapi_docs, P.PUBLIC, "This description as an HTML page", "Text", tag="service",
           content="text/html"),
)

METHODS: tuple[Method, ...] = (
    *handlers.METHODS,
    *snapshot_handlers.METHODS,
    *schema_handlers.METHODS,
    *ams_schema_handlers.METHODS,
    *ams_handlers.METHODS,
    *account_handlers.METHODS,
    *operations.METHODS,
    *PUBLIC,
    *CONSOLE,
)


def _tables(methods: tuple[Method, ...]) -> dict[str, dict[tuple[str, str], Method]]:
    out: dict[str, dict[tuple[str, str], Method]] = {}
    for method in methods:
        routed = out.setdefault(method.route, {})
        if method.key in routed:
            raise ValueError(f"{method.http} {method.url} is declared twice")
        routed[method.key] = method
    return out


_BY_ROUTE = _tables(METHODS)
ROUTES: Mapping[str, tuple[str, ...]] = {route: tuple(sorted({http for http, _ in methods}))
                                         for route, methods in _BY_ROUTE.items()}
PERMISSIONS: Mapping[str, Mapping[tuple[str, str], Rule]] = {
    route: {key: method.rule for key, method in methods.items()} for route, methods in _BY_ROUTE.items()}


def table(route: str) -> Mapping[tuple[str, str], Any]:
    """(HTTP method, verb) -> the handler of each method of ``route``."""
    return {key: method.handler for key, method in _BY_ROUTE.get(route, {}).items()}


def rule_for(route: str, method: str, verb: str) -> Rule | None:
    found = _BY_ROUTE.get(route, {}).get((method, verb))
    return found.rule if found is not None else None


def is_public(route: str) -> bool:
    return all(method.public for method in _BY_ROUTE[route].values())


def view_name(route: str) -> str:
    """A route template's name for Chalice, unique per template: ``/v1/jwks`` -> ``v1_jwks``."""
    return "".join(c if c.isalnum() else "_" for c in route).strip("_") or "root"
